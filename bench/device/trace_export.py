"""The PyTorch profiler's Chrome trace written gzipped (what `gpusqueeze analyze` and the fixtures take), shared by the
device scripts that record traces (record_traces.py, record_pairs.py)."""
import gzip
import os
import shutil


def export_gz(prof, path):
    """Writes prof's trace to PATH.gz (level 9) through PATH, which is removed; returns PATH.gz."""
    prof.export_chrome_trace(path)
    with open(path, "rb") as src, gzip.open(path + ".gz", "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    os.remove(path)
    return path + ".gz"
