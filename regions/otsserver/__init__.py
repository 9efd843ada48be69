"""A local Tablestore endpoint: the official ``tablestore`` SDK talks to it unchanged.

Modules, bottom up:

- ``plainbuffer``: the PlainBuffer row codec (no dependencies);
- ``auth``: request signature checks (V2 and V4) and response signing;
- ``errors``: the wire error type (HTTP status, code, message);
- ``convert``: protobuf messages <-> the data API's objects;
- ``protocol``: one handler per API, calling ``regions.tablestore.OTSClient``;
- ``http``: the HTTP/1.1 server (keep-alive, limits, errors);
- ``cli``: the ``regions-server`` console script.

``convert``, ``protocol`` and ``cli`` import the SDK's generated protobuf modules
(``pip install lsm-regions[server]``); ``plainbuffer``, ``auth`` and ``http`` do not.
"""
