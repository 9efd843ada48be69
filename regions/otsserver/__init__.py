"""A local Tablestore endpoint: the official ``tablestore`` SDK talks to it unchanged.

Modules, bottom up:

- ``plainbuffer``: the PlainBuffer row codec (no dependencies);
- ``auth``: request signature checks (V2 and V4) and response signing;
- ``protocol``: protobuf messages <-> the data API of ``regions.tablestore``;
- ``http``: the HTTP/1.1 server (keep-alive, limits, errors);
- ``cli``: the ``regions-server`` console script.

``protocol``, ``http`` and ``cli`` import the SDK's generated protobuf modules
(``pip install lsm-regions[server]``); ``plainbuffer`` and ``auth`` do not.
"""
