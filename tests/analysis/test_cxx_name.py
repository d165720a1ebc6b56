"""Base names read from the grammar of demangled C++ signatures: whatever the template arguments, scopes,
lambdas and parameter lists hold, the base name is the function's own identifier."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tracekit.analysis.cxx_name import function_name
from tracekit.analysis.kernel_key import base_name

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
