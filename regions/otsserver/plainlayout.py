"""The PlainBuffer format's wire numbers (the service's, never renumbered):
the one statement of them, which plainbuffer.py (the format's owner and its
documentation) and its C row encoder (``_plainbuffer``) both read."""

HEADER = 0x75

TAG_ROW_PK = 0x01
TAG_ROW_DATA = 0x02
TAG_CELL = 0x03
TAG_CELL_NAME = 0x04
TAG_CELL_VALUE = 0x05
TAG_CELL_TYPE = 0x06
TAG_CELL_TIMESTAMP = 0x07
TAG_DELETE_ROW_MARKER = 0x08
TAG_ROW_CHECKSUM = 0x09
TAG_CELL_CHECKSUM = 0x0A
TAG_EXTENSION = 0x0B            # a stream record's row extension (its sequence info)
TAG_SEQ_INFO = 0x0C
TAG_SEQ_INFO_EPOCH = 0x0D
TAG_SEQ_INFO_TS = 0x0E
TAG_SEQ_INFO_ROW_INDEX = 0x0F

VT_INTEGER = 0x0
VT_DOUBLE = 0x1
VT_BOOLEAN = 0x2
VT_STRING = 0x3
VT_NULL = 0x6
VT_BLOB = 0x7
VT_INF_MIN = 0x9
VT_INF_MAX = 0xA
VT_AUTO_INCREMENT = 0xB

DELETE_ALL_VERSION = 0x1
DELETE_ONE_VERSION = 0x3
INCREMENT = 0x4
