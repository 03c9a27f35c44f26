#!/usr/bin/python3
"""Runs keel's tools with bad arguments and bad environment values.

Usage: bad_input.py NAME=PATH ... (tools; cpu-plugin=PATH for the corrupt-plugin
cases). Each case states the exit code and a piece of the message it expects;
a crash (a signal), a hang (past the time limit) or another code fails. Prints
the table of cases (markdown) and exits 1 if any case failed.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

LIMIT_S = 60


def cases(tmp, plugin):
    """(tool, args, env, expected exit code, regex the output must match)."""
    c = []
    add = lambda tool, args, env, code, pattern: c.append((tool, args, env, code, pattern))

    for tool in ["keel-info", "keel-hello", "sync_latency", "lerp_bench", "keel-memory-bench", "keel-soak",
                 "keel-pipeline", "keel-cts", "keel-comm-bench"]:
        add(tool, ["--help"], {}, 0, r"(?si)" + re.escape(tool) + r".*usage")
        required = ["--mode", "hold"] if tool == "keel-pipeline" else []  # its one required option first
        add(tool, required + ["--no-such-option"], {}, 1, r"--no-such-option")

    # keel-info
    add("keel-info", ["--device", "nope:0"], {}, 1, r"no device named 'nope:0'; devices: cpu:0")
    add("keel-info", ["--device", "cuda:0"], {}, 1, r"no device named 'cuda:0'")
    add("keel-info", [], {"KEEL_LOG_LEVEL": "banana"}, 1, r"KEEL_LOG_LEVEL='banana': expected trace\|debug")
    add("keel-info", [], {"KEEL_CPU_DELAY": "99999999999"}, 1, r"KEEL_CPU_DELAY .*\n\s+INVALID: expected")
    add("keel-info", [], {"KEEL_CPU_DELAY_US": "-5"}, 1, r"KEEL_CPU_DELAY_US .*\n\s+INVALID")
    add("keel-info", [], {"KEEL_CHECK": "maybe"}, 1, r"KEEL_CHECK .*\n\s+INVALID")
    add("keel-info", [], {"KEEL_CPU_THREADS": "-3"}, 1, r"KEEL_CPU_THREADS .*\n\s+INVALID")
    add("keel-info", [], {"KEEL_CPU_SPIN_US": "soon"}, 1, r"KEEL_CPU_SPIN_US .*\n\s+INVALID")
    add("keel-info", [], {"KEEL_CPU_MEMORY_BYTES": "4X"}, 1, r"KEEL_CPU_MEMORY_BYTES .*\n\s+INVALID")
    add("keel-info", [], {"KEEL_CPU_FAIL_OP_PROB": "2"}, 1, r"KEEL_CPU_FAIL_OP_PROB .*\n\s+INVALID")
    add("keel-info", [], {"KEEL_CPU_LATE_FREE": "later"}, 1, r"KEEL_CPU_LATE_FREE .*\n\s+INVALID")
    add("keel-info", [], {"KEEL_PAGEABLE_BLOCKS": "0"}, 1, r"KEEL_PAGEABLE_BLOCKS .*\n\s+INVALID")
    add("keel-info", [], {"KEEL_COMM_STORE": "banana"}, 1, r"KEEL_COMM_STORE .*\n\s+INVALID")
    add("keel-info", [], {"KEEL_COMM_STORE": "tcp:127.0.0.1:99999"}, 1, r"KEEL_COMM_STORE .*\n\s+INVALID")

    # keel-comm-bench (no launcher: one rank of one, the store from its variable)
    one_rank = {"RANK": "0", "WORLD_SIZE": "1", "KEEL_COMM_STORE": "file:" + tmp}
    add("keel-comm-bench", ["--op", "banana"], {}, 1, r"--op")
    add("keel-comm-bench", ["-o", "mean"], {}, 1, r"-o")
    add("keel-comm-bench", ["-b", "lots"], {}, 1, r"-b")
    add("keel-comm-bench", ["-b", "1M", "-e", "1K"], {}, 1, r"-e .*below -b")
    add("keel-comm-bench", ["-f", "1"], {}, 1, r"-f")
    add("keel-comm-bench", ["-n", "0"], {}, 1, r"-n")
    add("keel-comm-bench", ["-c", "2"], {}, 1, r"-c")
    add("keel-comm-bench", ["--device", "nope:0"], one_rank, 1, r"no device named 'nope:0'")
    add("keel-comm-bench", ["-b", "4", "-e", "4"], {"RANK": "", "WORLD_SIZE": "", "SLURM_PROCID": "",
                                                     "OMPI_COMM_WORLD_RANK": ""}, 1, r"RANK/WORLD_SIZE")
    add("keel-comm-bench", ["-b", "4", "-e", "4"], dict(one_rank, KEEL_COMM_STORE="banana"), 1,
        r"KEEL_COMM_STORE='banana'")
    add("keel-comm-bench", ["--op", "send_recv", "-b", "4", "-e", "4"], one_rank, 1, r"send_recv needs 2 ranks")

    # keel-hello
    add("keel-hello", ["--count", "1e12"], {}, 1, r"--count")
    add("keel-hello", ["--count", "0"], {}, 1, r"--count")
    add("keel-hello", ["--count", "many"], {}, 1, r"--count")
    add("keel-hello", ["--alpha", "x"], {}, 1, r"--alpha")
    add("keel-hello", ["--device", "nope:0"], {}, 1, r"no device named 'nope:0'; devices: cpu:0")
    add("keel-hello", ["--device", "cuda:0"], {}, 1, r"no device named 'cuda:0'")
    add("keel-hello", [], {"KEEL_LOG_LEVEL": "banana"}, 1, r"KEEL_LOG_LEVEL='banana'")
    add("keel-hello", [], {"KEEL_CPU_DELAY": "random:abc"}, 1, r"KEEL_CPU_DELAY='random:abc': expected")
    add("keel-hello", [], {"KEEL_CPU_DELAY": "2000000"}, 1, r"KEEL_CPU_DELAY='2000000': expected")
    add("keel-hello", [], {"KEEL_CPU_SPIN_US": "99999999999"}, 1, r"KEEL_CPU_SPIN_US='99999999999'")
    add("keel-hello", [], {"KEEL_CPU_CHECK": "sometimes"}, 1, r"KEEL_CPU_CHECK='sometimes'")
    add("keel-hello", [], {"KEEL_CHECK": "maybe"}, 1, r"KEEL_CHECK='maybe'")
    add("keel-hello", [], {"KEEL_NO_CACHING": "2"}, 1, r"KEEL_NO_CACHING='2'")

    # sync_latency
    add("sync_latency", ["--iters", "-1"], {}, 1, r"--iters")
    add("sync_latency", ["--iters", "0"], {}, 1, r"--iters")
    add("sync_latency", ["--park-us", "-1"], {}, 1, r"--park-us")
    add("sync_latency", ["--idle-ms", "0"], {}, 1, r"--idle-ms")
    add("sync_latency", ["--device", "nope:0", "--iters", "100", "--idle-ms", "1"], {}, 1, r"no device named 'nope:0'")

    # lerp_bench
    add("lerp_bench", ["--reps", "0"], {}, 1, r"--reps")
    add("lerp_bench", ["--large-mib", "-4"], {}, 1, r"--large-mib")
    add("lerp_bench", ["--device", "nope:0"], {}, 1, r"no device named 'nope:0'")

    # keel-memory-bench
    add("keel-memory-bench", ["--op", "banana"], {}, 1, r"--op")
    add("keel-memory-bench", ["--sections", "9"], {}, 1, r"--sections")
    add("keel-memory-bench", ["--threads", "4,2"], {}, 1, r"--threads")
    add("keel-memory-bench", ["--streams", "many"], {}, 1, r"--streams")
    add("keel-memory-bench", ["--reps", "-1"], {}, 1, r"--reps")
    add("keel-memory-bench", ["--device", "nope:0"], {}, 1, r"no device named 'nope:0'")

    # keel-soak
    add("keel-soak", ["--seconds", "-1"], {}, 1, r"--seconds")
    add("keel-soak", ["--seconds", "0"], {}, 1, r"--seconds")
    add("keel-soak", ["--threads", "0"], {}, 1, r"--threads")
    add("keel-soak", ["--device", "nope:0", "--seconds", "1"], {}, 1, r"no device named 'nope:0'")
    add("keel-soak", ["--seconds", "1"], {"KEEL_LOG_LEVEL": "banana"}, 1, r"KEEL_LOG_LEVEL='banana'")

    # keel-pipeline
    add("keel-pipeline", [], {}, 1, r"--mode is required")
    add("keel-pipeline", ["--mode", "fast"], {}, 1, r"--mode")
    add("keel-pipeline", ["--mode", "hold", "-m", "0"], {}, 1, r"-m|--micro-batches")
    add("keel-pipeline", ["--mode", "hold", "--elements", "-1"], {}, 1, r"--elements")
    add("keel-pipeline", ["--mode", "hold", "--device", "nope:0"], {}, 1, r"no device named 'nope:0'")

    # keel-cts (GoogleTest's own flags pass through, so it parses by hand)
    add("keel-cts", ["--timeout=abc"], {}, 1, r"--timeout: 'abc'")
    add("keel-cts", ["--timeout=0"], {}, 1, r"--timeout: '0'")
    add("keel-cts", ["/nonexistent/libkeel_x.so"], {}, 1, r"does not exist")

    # A corrupt plugin file on KEEL_PLUGIN_PATH: rejected with its reason, the good plugin still works.
    if plugin:
        data = open(plugin, "rb").read()
        spoiled = {
            "truncated_half": data[: len(data) // 2],
            "truncated_64k": data[:65536],  # inside the code segment: SIGBUS in the system loader
            "empty": b"",
            "random": bytes((i * 7919 + 13) % 251 for i in range(len(data))),
            "wrong_arch": data[:18] + (b"\xb7\x00" if data[18:20] == b"\x3e\x00" else b"\x3e\x00") + data[20:],
        }
        for name, content in spoiled.items():
            d = os.path.join(tmp, name)
            os.makedirs(d, exist_ok=True)
            path = os.path.join(d, "libkeel_spoiled.so")
            with open(path, "wb") as f:
                f.write(content)
            add("keel-info", [], {"KEEL_PLUGIN_PATH": d}, 0,
                r"libkeel_spoiled.so\n\s+INVALID_ARGUMENT: .*libkeel_spoiled.so is not a loadable shared library")
            add("keel-hello", ["--count", "1000"], {"KEEL_PLUGIN_PATH": d}, 0,
                r"(?s)rejected plugin .*libkeel_spoiled.so.*OK")
            add("keel-cts", [path], {}, 1, r"libkeel_spoiled.so is not a loadable shared library")
            add("keel-hello", ["--device", "spoiled:0"], {"KEEL_PLUGIN_PATH": d}, 1,
                r"no device named 'spoiled:0'; devices: cpu:0.*; rejected plugin files: libkeel_spoiled.so")
    return c


def main():
    tools = dict(a.split("=", 1) for a in sys.argv[1:])
    plugin = tools.pop("cpu-plugin", None)
    tmp = tempfile.mkdtemp(prefix="keel-bad-input-")
    failed = 0
    rows = []
    try:
        for tool, args, env, code, pattern in cases(tmp, plugin):
            if tool not in tools:
                continue
            full_env = dict(os.environ)
            for k in list(full_env):
                if k.startswith("KEEL_") and k != "KEEL_PLUGIN_PATH":
                    del full_env[k]
            full_env.update(env)
            try:
                p = subprocess.run([tools[tool]] + args, env=full_env, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, timeout=LIMIT_S)
                got, out = p.returncode, p.stdout.decode(errors="replace")
            except subprocess.TimeoutExpired:
                got, out = "hang", ""
            matched = re.search(pattern, out) is not None
            ok = got == code and matched
            failed += not ok
            env_text = " ".join(f"{k}={v}" for k, v in env.items())
            env_text = re.sub(r"=/\S*/", "=.../", env_text)
            lines = [l.strip() for l in out.splitlines() if l.strip()]
            key = pattern.replace("(?s)", "").split("\\n")[-1].split(".*")[-1]
            said = next((l for l in lines if re.search(key, l)), None) or \
                next((l for l in lines if l.startswith(tool + ":")), None) or (lines[-1] if lines else "")
            rows.append((tool, " ".join(args), env_text, str(code), str(got), "ok" if ok else "FAILED",
                         said[:140]))
            if not ok:
                print(f"FAILED: {env_text} {tool} {' '.join(args)}: exit {got} (expected {code}), "
                      f"output {'matches' if matched else 'does not match'} /{pattern}/:\n{out}\n")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("| tool | arguments | environment | expected | exit | verdict | message |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print("| " + " | ".join(x.replace("|", "\\|") for x in r) + " |")
    print(f"\n{len(rows)} cases, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
