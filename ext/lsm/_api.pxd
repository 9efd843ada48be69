# lsm's C face: the one .pxd a higher package (regions) may cimport from lsm.
# What lies behind it (record kinds, batches, versions, tables) is lsm's own.
#
#   point_get(path, key)                     DB.get from C (path: the DB's lsm._read.PointPath)
#   point_scan_short(path, start, end, n)    DB.scan_short from C (the same PointPath)
#   write_put(path, key, value, sync)        DB.put from C (path: the DB's lsm._write.WritePath)
#   PrefixExtractor, prefix_fn               a prefix extractor made in C (Options.prefix_extractor)
from lsm._memtable cimport PrefixExtractor, prefix_fn
from lsm._read cimport point_get, point_scan_short
from lsm._write cimport write_put
