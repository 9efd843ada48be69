# lsm's C face: the one .pxd a higher package (regions) may cimport from lsm.
# What lies behind it (record kinds, the batch's operations, versions, tables)
# is lsm's own.
#
#   point_path(store)                        the lsm._read.PointPath that runs store.get and
#                                            store.scan_short (an lsm.DB's, bound when it
#                                            opened), or None: another store, or the switch
#   write_path(store)                        likewise the lsm._write.WritePath of store.put
#   point_get(path, key)                     DB.get from C (path: a point_path)
#   point_scan_short(path, start, end, n)    DB.scan_short from C (the same path)
#   write_put(path, key, value, sync)        DB.put from C (path: a write_path)
#   batch_first_key(batch)                   the first key of a non-empty lsm.WriteBatch, else None
#   batch_len_within(batch, start, end)      its operations' count when every key lies in
#                                            [start, end) (end None: unbounded), else 0
#   PrefixExtractor, prefix_fn               a prefix extractor made in C (Options.prefix_extractor)
from lsm._memtable cimport PrefixExtractor, prefix_fn
from lsm._read cimport point_get, point_scan_short
from lsm._write cimport write_put
from lsm._write_batch cimport WriteBatch, batch_first_key, batch_len_within

cdef object point_path(object store)
cdef object write_path(object store)
