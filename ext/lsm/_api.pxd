# lsm's C face: the one .pxd a higher package (regions) may cimport from lsm.
# What lies behind it (record kinds, the batch's operations, versions, tables)
# is lsm's own: a caller writes (key, value) pairs.
#
#   point_path(store)                        the lsm._read.PointPath that runs store.get and
#                                            store.scan_short (an lsm.DB's, bound when it
#                                            opened), or None: another store, or the switch
#   write_path(store)                        likewise the lsm._write.WritePath of store.put
#                                            and store.write_pairs
#   point_get(path, key)                     DB.get from C (path: a point_path)
#   point_scan_short(path, start, end, n)    DB.scan_short from C (the same path)
#   point_scan_into(path, start, end, n,     DB.scan_chunk from C (the same path), each entry
#       reverse, snapshot, fn, ctx,          handed to fn(ctx, key, klen, value, vlen) in place
#       &count, &stopped)                    (an entry_fn: 0 go on, 1 stop, -1 raised) instead
#                                            of a list; returns the last key handed over
#   write_put(path, key, value, sync)        DB.put from C (path: a write_path)
#   write_pairs(path, pairs, sync)           DB.write_pairs from C (the same path): a list of
#                                            (key, value) tuples, value None a delete, applied
#                                            as one atomic write, no WriteBatch made
#   pairs_bytes(pairs)                       the check of such a list (TypeError, ValueError:
#                                            the first bad pair), lengths aside; its bytes
#   PrefixExtractor, prefix_fn               a prefix extractor made in C (Options.prefix_extractor)
from lsm._memtable cimport PrefixExtractor, prefix_fn
from lsm._db_iter cimport entry_fn
from lsm._read cimport point_get, point_scan_into, point_scan_short
from lsm._write cimport write_pairs, write_put
from lsm._write_batch cimport pairs_bytes

cdef object point_path(object store)
cdef object write_path(object store)
