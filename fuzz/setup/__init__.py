"""``lafuzz setup``: from an installed package, what the other builds of ONNX Runtime need and pip cannot bring.

The npm packages of the JS runner (``ort-node``, ``ort-web``) and the second Python environment
(``ort-webgpu-builtin``) are installed where the backends look for them (``fuzz.data_dir``); the system packages
(Node.js, Chromium, the Vulkan loader, lavapipe, python3-venv) are only checked, each missing one named with the
command that installs it. ``scripts/setup.sh`` calls it too, so a checkout and a wheel are set up one way.
"""
