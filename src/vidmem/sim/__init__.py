"""The offline reference world: procedural cases and videos with a truth sidecar.

A small, deterministic, CPU-fast world built only from scikit-image's bundled photos,
for demos, tests and for validating scorers against a truth they cannot see. Every
output is a pure function of ``(seed, parameters)``.

Modules:

* :mod:`~vidmem.sim.assets` -- places (panorama sectors) and entities (masked photo
  patches: name, aliases, kind, look-alikes); :mod:`~vidmem.sim.sprites` -- entity
  states (``base``, ``recoloured:<colour>``, ``accessory``, ``broken``,
  ``open``/``closed``) drawn as premultiplied RGBA sprites.
* :mod:`~vidmem.sim.camera` -- poses ``(yaw, pitch, zoom, tx, ty)`` and their
  camera-to-world matrices (the convention is documented there).
* :mod:`~vidmem.sim.world` -- :class:`~vidmem.sim.world.WorldSpec`: what is needed to
  re-render a scene (no per-frame truth), JSON round trip.
* :mod:`~vidmem.sim.render` -- frames and their truth (visible boxes, visible fraction,
  pose per frame).
* :mod:`~vidmem.sim.media` -- MP4 / PNG files carrying their world spec (it stands in
  for a model's world knowledge; scorers never read it).
* :mod:`~vidmem.sim.loops` -- the six memory-loop trajectories and the sim's revisit
  pairing.
* :mod:`~vidmem.sim.build` -- ``build(benchmark, out, seed=, n_cases=)`` with
  :mod:`~vidmem.benchmarks.cmbench.sim_build` and :mod:`~vidmem.benchmarks.memory_loop.sim_build`
  (scenario planning in :mod:`~vidmem.benchmarks.cmbench.sim_plan`).
* what the ``sim`` generator (:class:`vidmem.generators.sim.SimGenerator`, the adapter
  in the generators layer) plays: a memory knob (:mod:`~vidmem.sim.memory`), a prompt
  grammar (:mod:`~vidmem.sim.prompts`), CMBench continuations
  (:mod:`~vidmem.sim.gen_cmbench`), loop rollouts (:mod:`~vidmem.sim.gen_loop`) and
  story segments (:mod:`~vidmem.sim.gen_story`, :mod:`~vidmem.sim.story_memory`).
* :mod:`~vidmem.sim.cards` -- the card deck: the sim's appearance phrases and entity /
  place images as plain files, the weights of ``judge/sim-cards``.

Heavy modules are not imported here; import what you need, e.g.
``from vidmem.runners.sim_build import build``.
"""
