"""The benchmark of docs/spec.md §5: latency by window, rollback value, memory, ORT side by side, gates.

Definitions (also printed in every report):

- verify_W: the p50 kernel time of the W-window call over T draft tokens; verify_0: the same at W = 0.
- On a rejection with ``a`` accepted tokens (0 <= a < T), without a window the caller reruns the
  accepted prefix (a W = 0 call over ``a`` tokens from the original past state; a = 0 costs
  nothing extra); with a window it selects a slot (rebinding it as the next call's seed where its
  offset is aligned, else a GPU copy of one slot; for a = 0, nothing).
- p* = (verify_W - verify_0) / E[prefix_rerun - checkpoint_select | rejection], the expectation over
  the acceptance distribution (uniform on 0..T-1 by default, or geometric with acceptance rate r:
  P(a) ∝ r^a (1-r), a < T) and only over accepted lengths the window represents (T - W < a);
  unrepresented ones need a rerun in both cases and contribute 0.

Modules: ``protocol`` (samplers, clocks, the wall-clock protocol), ``rounds`` (the settling
warm-up and interleaved rounds of the kernel clock), ``confidence`` (bootstrap intervals over
rounds and the PASS / FAIL / INCONCLUSIVE verdict), ``workload``
(shapes, inputs, a bound call), ``kernel_timing``, ``rollback`` (the p* math), ``memory``,
``ort_side``, ``gates``, ``report``, ``runner`` (one run), ``cli`` (the command line), ``arguments`` (argument
types the command lines share). Two more benches: ``block`` (a hybrid block's rollback) and ``designs`` (the window,
GatedDeltaNet's capsule and a rerun side by side; ``rollback_designs``, ``capsule_work``, ``designs_report``).
"""
