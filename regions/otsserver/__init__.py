"""A local Tablestore endpoint: the official ``tablestore`` SDK talks to it unchanged.

Modules, bottom up:

- ``plainbuffer``: the PlainBuffer row codec (no dependencies; its row encoder
  runs in C, ``_plainbuffer``, built from ext/regions/otsserver/), the wire
  numbers of both in ``plainlayout``;
- ``auth``: request signature checks (V2 and V4) and response signing;
- ``errors``: the wire error type (HTTP status, code, message);
- ``wire``: the service's table_store.proto (the SDK's messages with the
  fields, enums and messages it lacks), classes in a package of ours;
- ``rowmatrix``: GetRange's SimpleRowMatrix row block;
- ``convert``: protobuf messages <-> the data API's objects;
- ``protocol``: one handler per API, calling ``regions.tablestore.OTSClient``;
- ``httphead``: the HTTP/1.1 request-head parser;
- ``hosts``: the ``Host`` names a server on loopback answers (DNS rebinding);
- ``http``: the HTTP/1.1 server (keep-alive, limits, deadlines, the connection
  cap, errors; GET goes to the console);
- ``console``: the web console (HTML pages and their JSON twins, basic auth
  off loopback); ``metrics``: ``GET /metrics`` through ``prometheus_client``;
- ``browser``: installs headless Chromium for the console's browser test;
- ``sdk``: the official SDK, imported without its native-codec warnings;
- ``cli``: the ``regions-server`` console script.

``wire``, ``convert`` and ``protocol`` (so ``cli``'s server) import the SDK's generated
protobuf modules (``pip install -e '.[server]'``); ``plainbuffer``, ``auth``,
``httphead`` and ``http`` do not.  ``metrics`` imports ``prometheus_client``
(also in the ``server`` extra) when scraped.
"""
from regions.otsserver import sdk as _sdk

# Before any module of this package imports the SDK (see sdk.py).
_sdk.quiet()
