"""A finding as an upstream bug report: a folder with ``model.onnx``, ONNX test data, ``repro.py`` and
``ISSUE.md`` that needs nothing of this project (``lafuzz export``; ``exporter.export_entry``)."""
