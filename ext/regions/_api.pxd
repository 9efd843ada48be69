# regions' C face: the one .pxd a higher package (regions.tablestore,
# regions.otsserver) may cimport from regions; it never reaches into lsm,
# whose face (lsm/_api.pxd) regions passes on what its callers need of it.
#
#   Buf, buf_reserve, buf_put, buf_put_byte,      the growable output buffer of the C
#   buf_put_le, buf_put_be64, buf_take            encoders (regions/_buf.pxd owns it)
#   PrefixExtractor, prefix_fn                    a prefix extractor made in C, which a
#                                                 table's stores are configured with
#   range_path(server)                            the Router a RegionServer's read_range is
#                                                 bound to, or None (another server, the switch)
#   range_scan_into(path, table, start, end,      RegionServer.scan from C (path: a range_path),
#       reverse, expect, fn, ctx)                 each entry handed to fn(ctx, key, klen, value,
#                                                 vlen) in place (entry_fn: 0 go on, 1 stop, -1
#                                                 raised); 1: declined, nothing read
from regions._buf cimport (Buf, buf_put, buf_put_be64, buf_put_byte, buf_put_le, buf_reserve,
                           buf_take)
from lsm._api cimport PrefixExtractor, entry_fn, prefix_fn
from regions._router cimport range_path, range_scan_into
