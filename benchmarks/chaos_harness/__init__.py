"""The fault-schedule harness behind ``benchmarks/chaos.py`` (and tests/test_chaos*.py): seeded
schedules of crashes, outages, racing drivers, clock jumps, late input and killed resets over
one bookmarked job each, then recovery and a check against an exactly-once model.  The script's
docstring describes the steps, the jobs and the model; the modules here are its pieces.

    from chaos_harness.runner import run_chaos   # with benchmarks/ on sys.path
    report = run_chaos(2, seed=1, steps=3, jobs=("files",))
"""
