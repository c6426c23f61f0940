"""Shared test set-up: the WebGPU environment (before any backend library loads) and the
Hypothesis profiles, registered so that ``pytest --hypothesis-profile=NAME`` selects one."""

from fuzz import environment
from fuzz.campaign import profiles

environment.prepare()
profiles.register()
