"""Nsight Compute CSV (`ncu --csv`): the reader (`reader`: FORMAT, sniff, read) and the modules it is split into."""
