"""Warp traces (CSV, gzip CSV, Parquet, JSON, cuda_scheduling_examiner logs): the reader (`reader`: FORMAT, sniff,
read) and the modules it is split into, one per container or concern."""
