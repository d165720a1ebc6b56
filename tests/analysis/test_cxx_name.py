"""Base names read from the grammar of demangled C++ signatures: whatever the template arguments, scopes,
lambdas and parameter lists hold, the base name is the function's own identifier."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tracekit.cxx_name import function_name, neutral_kernel_name, normalize_kernel_name
from tracekit.kernel_key import base_name

_KEYWORDS = {"void", "const", "volatile", "operator", "unsigned", "signed", "int", "long", "short", "char", "with"}
_KEYWORDS |= {"noexcept", "static", "extern", "inline", "bool", "float", "double", "lambda", "instance"}

identifiers = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True).filter(lambda s: s not in _KEYWORDS)
scopes = st.lists(st.one_of(identifiers, st.just("<unnamed>"), st.just("(anonymous namespace)")), max_size=3).map(
    lambda parts: "".join(f"{part}::" for part in parts)
)


def _types(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Type-ish and value-ish template arguments, recursively: templates, pointers, casts, lambdas (EDG and
    libstdc++ spellings), a lambda inside a function's scope with `operator ()() const`, function types."""
    arguments = st.lists(children, min_size=1, max_size=3).map(", ".join)
    return st.one_of(
        st.builds(lambda s, n, a: f"{s}{n}<{a}>", scopes, identifiers, arguments),
        st.builds(lambda t: f"const {t} *", children),
        st.builds(lambda t: f"{t} &", children),
        st.builds(lambda a: f"[lambda({a}) (instance 1)]", st.one_of(st.just(""), arguments)),
        st.builds(lambda a, n: f"{{lambda({a})#{n}}}", st.one_of(st.just(""), arguments), st.integers(1, 9)),
        st.builds(
            lambda s, f, a: (
                f"void {s}{f}({a})::[lambda() (instance 1)]::operator ()() const::[lambda(float) (instance 2)]"
            ),
            scopes,
            identifiers,
            arguments,
        ),
        st.builds(lambda r, a: f"{r} (*)({a})", children, arguments),
    )


leaves = st.one_of(
    identifiers,
    st.builds(lambda t, v: f"({t}){v}", st.sampled_from(["int", "unsigned int", "bool", "long"]), st.integers(0, 99)),
    st.sampled_from(["float", "__half", "unsigned long", "T1", "(bool)1", "4u"]),
)
template_arguments = st.recursive(leaves, _types, max_leaves=12)


@st.composite
def signatures(draw: st.DrawFn) -> tuple[str, str]:
    """A demangled kernel signature and the identifier it names."""
    name = draw(identifiers)
    text = draw(scopes) + name
    if draw(st.booleans()):
        text += "<" + ", ".join(draw(st.lists(template_arguments, min_size=1, max_size=4))) + ">"
    if draw(st.booleans()):
        text += "(" + ", ".join(draw(st.lists(template_arguments, max_size=4))) + ")"
        text += draw(st.sampled_from(["", " const", " [with T1=float, T2=int]", "[abi:cxx11]"]))
    prefix = draw(st.sampled_from(["", "void ", "__global__ void ", "at::Tensor ", "std::pair<int, float> "]))
    return prefix + text, name


@given(signatures())
def test_base_name_is_the_functions_identifier(case):
    signature, name = case
    assert base_name(signature) == name, signature


@pytest.mark.parametrize(
    ("signature", "base"),
    [
        # ATen's curand kernels (nsys shortName distribution_elementwise_grid_stride_kernel).
        (
            "void at::native::<unnamed>::distribution_elementwise_grid_stride_kernel<float, (int)4, void "
            "at::native::templates::cuda::normal_and_transform<c10::Half, float, at::CUDAGeneratorImpl *, void "
            "at::native::templates::cuda::normal_kernel<at::CUDAGeneratorImpl *>(const at::TensorBase &, double, "
            "double, T1)::[lambda() (instance 1)]::operator ()() const::[lambda() (instance 3)]::operator ()() "
            "const::[lambda(float) (instance 1)]>(at::TensorIteratorBase &, T3, T4)::[lambda(curandStatePhilox4_32"
            "_10 *) (instance 2)], void at::native::<unnamed>::distribution_nullary_kernel<c10::Half, float, "
            "(int)4>::[lambda(int, float) (instance 1)]>(long, at::PhiloxCudaState, T3, T4)",
            "distribution_elementwise_grid_stride_kernel",
        ),
        # nvFuser: an unnamed scope before the name and inside the parameters.
        (
            "<unnamed>::nvfuser_none_f0_c0_r0_g0(<unnamed>::Tensor<<unnamed>::__half, (int)3, (int)3>, "
            "<unnamed>::TensorMap)",
            "nvfuser_none_f0_c0_r0_g0",
        ),
        # libstdc++'s spelling of the same kind of name (c++filt).
        (
            "void at::native::(anonymous namespace)::reduce_kernel<512, 1, at::native::ReduceOp<bool, "
            "at::native::func_wrapper_t<bool, at::native::and_kernel_cuda(at::TensorIterator&)::{lambda()#1}::"
            "operator()() const::{lambda(bool, bool)#1}>, unsigned int, bool, 4> >(at::native::ReduceOp<bool>)",
            "reduce_kernel",
        ),
        # EDG's unresolved parameters with their [with ...] clause.
        ("void kern<T1, T2>(T1 *, T2) [with T1=float, T2=int]", "kern"),
        ("void f<(bool)1>(float *, int)", "f"),
        ("void cutlass::Kernel<cutlass::gemm::kernel::Gemm<...>>(T1::Params)", "Kernel"),
        ("std::enable_if<true, void>::type ns::k<int>(int)", "k"),
        (
            "void cub::DeviceReduceKernel<cub::Policy<cuda::std::__4::plus<void>>::Policy600, double *>(T2)",
            "DeviceReduceKernel",
        ),
        (
            "sm80_xmma_fprop_implicit_gemm_f16f16_execute_kernel_trt",
            "sm80_xmma_fprop_implicit_gemm_f16f16_execute_kernel_trt",
        ),
        ("fma_chain<4>", "fma_chain"),
        ("void ns::Functor::operator()(int) const", "operator()"),
        ("void k<(bool)(3 < 4)>(int)", "k"),
        ("void truncated_kernel<float, at::native::<unnamed>::Functor<", "truncated_kernel"),
        ("", ""),
    ],
)
def test_base_names_of_real_signature_shapes(signature, base):
    assert function_name(signature) == base


# One kernel as libstdc++ (CUPTI: the PyTorch profiler, nsys) and as Nsight Compute's EDG demangler write it,
# taken from the H100 pairing pass (sample_traces/pairing): each pair is one kernel.
SAME_KERNEL = [
    (  # CUB's scan: `false` / `0`, an enum cast, the inline THRUST namespace, `const` before or after
        "void at_cuda_detail::cub::detail::scan::DeviceScanKernel<at_cuda_detail::cub::detail::scan::policy_hub<float, "
        "float, float, unsigned int, std::plus<float> >::Policy1000, float const*, float*, "
        "at_cuda_detail::cub::ScanTileState<float, true>, std::plus<float>, at_cuda_detail::cub::NullType, "
        "unsigned int, float, false>(float const*, float*, at_cuda_detail::cub::ScanTileState<float, true>, int, "
        "std::plus<float>, at_cuda_detail::cub::NullType, unsigned int)",
        "void scan::DeviceScanKernel<scan::policy_hub<float, float, float, unsigned int, "
        "std::plus<float>>::Policy1000, const float *, float *, cub::ScanTileState<float, 1>, std::plus<float>, "
        "cub::NullType, unsigned int, float, "
        "0>(T2, T3, T4, int, T5, T6, T7)",
    ),
    (  # a lambda of a lambda: `{lambda()#3}` / `[lambda() (instance 3)]`, the enclosing function's parameters
        # as types / as the template's names, EDG's return type before that function, `at::native::` / `native::`
        "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::"
        "direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#4}::"
        "operator()() const::{lambda(long)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda("
        "at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#4}::operator()() const::"
        "{lambda(long)#1} const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<X>::{lambda(int)#1})",
        "void native::elementwise_kernel<128, 2, void native::gpu_kernel_impl_nocast<native::direct_copy_kernel_cuda("
        "at::TensorIteratorBase &)::[lambda() (instance 3)]::operator ()() const::[lambda() (instance 4)]::operator "
        "()() const::[lambda(long) (instance 1)]>(at::TensorIteratorBase &, const T1 &)::[lambda(int) (instance 1)]>"
        "(int, T3)",
    ),
    (  # `(anonymous namespace)` / `<unnamed>`, `2ul` / `2`, `> >` / `>>`
        "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
        "pow_tensor_scalar_kernel_impl<float, float>(at::TensorIteratorBase&, float)::{lambda(float)#2}, "
        "std::array<char*, 2ul> >(int, X, std::array<char*, 2ul>)",
        "void native::vectorized_elementwise_kernel<4, void native::<unnamed>::pow_tensor_scalar_kernel_impl<float, "
        "float>(at::TensorIteratorBase &, T2)::[lambda(float) (instance 2)], std::array<char *, 2>>(int, T2, T3)",
    ),
    (  # `(int)-1` / `-1`, `bool` as EDG's return type of the enclosing function, `true` / `1`
        "void at::cuda::kernelHistogram1D<long, long, long, 1, 2, -1, (at::cuda::CUDAHistogramMemoryType)0, "
        "at::cuda::CUDA_tensor_histogram<long, long, false>(at::Tensor, at::Tensor, at::Tensor, long, "
        "at::AccumulateType<long, true>::type, at::AccumulateType<long, true>::type, at::cuda::TensorArgType, "
        "at::cuda::TensorArgType, at::cuda::TensorArgType)::{lambda(long)#1}>(X)",
        "void cuda::kernelHistogram1D<long, long, long, 1, 2, (int)-1, 0, bool cuda::CUDA_tensor_histogram<long, "
        "long, 0>(at::Tensor, at::Tensor, at::Tensor, long, at::AccumulateType<T2, 1>::type, at::AccumulateType<T2, "
        "1>::type, cuda::TensorArgType, cuda::TensorArgType, cuda::TensorArgType)::[lambda(long) (instance 1)]>(T4)",
    ),
]


@pytest.mark.parametrize(("cupti", "ncu"), SAME_KERNEL)
def test_cupti_and_nsight_compute_spellings_are_one_neutral_name(cupti: str, ncu: str):
    assert normalize_kernel_name(cupti) != normalize_kernel_name(ncu)  # one tool's spelling tells them apart
    assert neutral_kernel_name(cupti) == neutral_kernel_name(ncu)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        # another lambda of the same function, another template argument, another enclosing function
        (SAME_KERNEL[2][1], SAME_KERNEL[2][1].replace("(instance 2)", "(instance 1)")),
        (SAME_KERNEL[0][0], SAME_KERNEL[0][0].replace("Policy1000", "Policy900")),
        (
            SAME_KERNEL[0][0],
            SAME_KERNEL[0][0].replace("std::plus<float> >::Policy1000", "std::max<float> >::Policy1000"),
        ),
        (SAME_KERNEL[2][0], SAME_KERNEL[2][0].replace("pow_tensor_scalar_kernel_impl", "sqrt_kernel_impl")),
        (SAME_KERNEL[3][1], SAME_KERNEL[3][1].replace("(int)-1", "(int)1")),
    ],
)
def test_other_kernels_keep_other_neutral_names(one: str, other: str):
    assert neutral_kernel_name(one) != neutral_kernel_name(other)
