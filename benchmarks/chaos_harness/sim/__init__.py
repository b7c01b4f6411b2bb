"""The deterministic simulation of the run protocol (``benchmarks/chaos.py --simulate``): the
real sparkmark code in one process over a simulated engine, file system and clock, with the
real state store on SQLite, seeded and replayable.  See docs/reliability.md.

    from chaos_harness.sim.run import run_schedule
    run_schedule(seed=1, workdir="/tmp/sim").problems   # [] when the protocol held
"""
