"""RLlib PPO env steps/s on a SuperDex id with 0, 1 and 2 remote env runners over the native vector env, against
RLlib's default ``SyncVectorEnv`` over single envs (0 runners) as the anchor, all in one process and Ray session,
rounds interleaved; medians per setting. Needs the rllib extra (its own venv).

    python tools/rllib_throughput.py --env SuperDex/Reach-v0 --rounds 3 --iterations 3

Each iteration samples 3 200 steps (16 worlds a runner) and takes one gradient step, so it is nearly all sampling;
"sample" is the steps over RLlib's env_runner_sampling_timer, "iteration" over the whole train() call.
"""

import argparse
import statistics
import time

from superdex_gym.training import rllib as rl

SETTINGS = (("sync, 0 runners (anchor)", 0, "sync"), ("native, 0 runners", 0, "vector_entry_point"),
            ("native, 1 runner", 1, "vector_entry_point"), ("native, 2 runners", 2, "vector_entry_point"))


def measure(env_id, runners, mode, iterations):
    cfg = rl.load_rllib_config("reach_ppo", [f'env_id="{env_id}"', f"env_runners.num_env_runners={runners}",
                                             f'env_runners.gym_env_vectorize_mode="{mode}"',
                                             "training.train_batch_size_per_learner=3200",
                                             "training.minibatch_size=3200", "training.num_epochs=1"])
    algo = rl.ppo_config(cfg).build_algo()
    try:
        algo.train()  # start-up: compiling, first resets
        it, sa = [], []
        for _ in range(iterations):
            t0 = time.perf_counter()
            r = algo.train()
            dt = time.perf_counter() - t0
            n = r["env_runners"]["num_env_steps_sampled"]
            it.append(n / dt)
            sa.append(n / r["timers"]["env_runner_sampling_timer"])
        return it, sa
    finally:
        algo.stop()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--env", default="SuperDex/Reach-v0")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--iterations", type=int, default=3)
    p.add_argument("--num-cpus", type=int, default=3, help="Ray's logical CPUs: the driver + 2 runners")
    args = p.parse_args()
    ray, _, _ = rl.import_rllib()
    ray.init(address="local", num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    got = {name: ([], []) for name, _, _ in SETTINGS}
    try:
        for _ in range(args.rounds):
            for name, runners, mode in SETTINGS:
                it, sa = measure(args.env, runners, mode, args.iterations)
                got[name][0].extend(it)
                got[name][1].extend(sa)
    finally:
        ray.shutdown()
    anchor = statistics.median(got[SETTINGS[0][0]][0])
    print(f"{args.env}: env steps/s, medians of {args.rounds} x {args.iterations} iterations")
    print(f"{'setting':28s} {'iteration':>10s} {'sample':>10s} {'x anchor':>9s}")
    for name, (it, sa) in got.items():
        m = statistics.median(it)
        print(f"{name:28s} {m:10.0f} {statistics.median(sa):10.0f} {m / anchor:9.2f}")


if __name__ == "__main__":
    main()
