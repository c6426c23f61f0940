"""The case model: the ops under test (``ops``), one call, chain or block of calls of them, and what a failing
case is reported as (``findings``), in one serialisable form every layer above shares."""
