"""The ops under test, one package each, and the registry that lists them (``fuzz.ops.registry``).

Adding an op to the engine is adding a folder here and a line to the registry: the engine, the campaign and
the export ask an op's package through the registry, never for an op by name.
"""
