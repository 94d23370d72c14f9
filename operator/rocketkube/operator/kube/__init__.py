"""Reading and writing Kubernetes objects: the operator's only door to the API server.

- ``paths``   REST paths of the kinds the operator touches (no discovery round trips)
- ``client``  :class:`Kube`: get, list, create, replace, patch, delete over the asyncio
              Kubernetes client's configured connection, errors as :class:`ApiError`
- ``diff``    whether a live object already holds what the operator wants (pure)
"""
