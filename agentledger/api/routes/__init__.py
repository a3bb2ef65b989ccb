"""The API's routers, one module per resource: ``runs``, ``admin``, ``memory``, ``live`` (the
event stream) and ``ui`` (the web pages). ``agentledger.api.main`` mounts them."""
