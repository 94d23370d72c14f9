"""The operator's resources as pydantic models: the single source of the CRDs in ``crds/``.

- ``models``      spec and status of ``BrokerCluster``, ``Topic``, ``ConsumerGroup``
- ``conditions``  condition types and reasons (constants), and setting a condition
- ``names``       every name the operator derives (objects, brokers, addresses)
- ``crds``        the CustomResourceDefinitions generated from the models
- ``schema``      pydantic JSON Schema -> Kubernetes structural OpenAPI schema
"""
