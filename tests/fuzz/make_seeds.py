#!/usr/bin/env python3
"""Writes the seed inputs of tests/fuzz/corpus/<harness>/seed-* (valid files of each format and a
few near misses), from the formats' descriptions alone (no numpy). Regression inputs that a fuzzer
found are kept beside them as regress-*; this script never touches those. Run from anywhere:
python3 tests/fuzz/make_seeds.py"""

import gzip
import io
import json
import pathlib
import struct
import zipfile
import zlib

ROOT = pathlib.Path(__file__).resolve().parent
REPO = ROOT.parent.parent


def write(harness, name, data):
    folder = ROOT / "corpus" / harness
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ("seed-" + name)).write_bytes(data if isinstance(data, bytes) else data.encode())


def npy(descr, shape, data, version=1, order="False"):
    shape_text = "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, order, shape_text)
    lead = 10 if version == 1 else 12
    header += " " * ((64 - (lead + len(header) + 1) % 64) % 64) + "\n"
    size = struct.pack("<H", len(header)) if version == 1 else struct.pack("<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + size + header.encode() + data


def npz(members, deflate):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED) as z:
        for name, data in members:
            z.writestr(name, data)
    return out.getvalue()


def seeds_npy():
    x = npy("<f4", (2, 2), struct.pack("<4f", 1, 2, 3, 4))
    y = npy("<i8", (3,), struct.pack("<3q", 0, 1, 2))
    write("npy", "f4-2x2", x)
    write("npy", "i8-labels", y)
    write("npy", "u1-pixels", npy("|u1", (2, 3), bytes(range(6))))
    write("npy", "u8-huge-label", npy("<u8", (2,), struct.pack("<2Q", 0, 2**64 - 1)))
    write("npy", "f8-v2", npy("<f8", (1,), struct.pack("<d", 0.5), version=2))
    write("npy", "fortran", npy("<f4", (2, 2), struct.pack("<4f", 1, 2, 3, 4), order="True"))
    write("npy", "shape-beyond-data", npy("<f4", (100000, 784), struct.pack("<4f", 1, 2, 3, 4)))
    write("npy", "shape-overflow", npy("<f8", (2**40, 2**40), b""))
    write("npy", "big-endian", npy(">f4", (1,), b"\0\0\0\0"))
    write("npy", "scalar", npy("<i4", (), struct.pack("<i", 7)))
    return x, y


def seeds_npz(x, y):
    write("npz", "stored", npz([("x.npy", x), ("y.npy", y)], False))
    write("npz", "deflated", npz([("x.npy", x), ("y.npy", y)], True))
    huge = npy("<i8", (2,), struct.pack("<2q", 0, 2**40))
    write("npz", "huge-label", npz([("x.npy", npy("<f4", (2, 1), struct.pack("<2f", 1, 2))), ("y.npy", huge)], True))
    write("npz", "not-npy", npz([("notes.txt", b"hello")], False))
    write("npz", "zeros", npz([("x.npy", npy("|u1", (4096, 64), bytes(4096 * 64)))], True))
    write("npz", "empty", npz([], False))


def idx(magic, sizes, payload):
    return struct.pack(">I", magic) + b"".join(struct.pack(">I", s) for s in sizes) + payload


def seeds_idx():
    images = idx(0x803, (2, 28, 28), bytes(i % 256 for i in range(2 * 784)))
    labels = idx(0x801, (5,), bytes([0, 1, 2, 3, 9]))
    write("idx", "images", images)
    write("idx", "labels", labels)
    write("idx", "images-gz", gzip.compress(images, mtime=0))
    write("idx", "labels-gz", gzip.compress(labels, mtime=0))
    write("idx", "huge-count", gzip.compress(idx(0x803, (0xFFFFFFFF, 28, 28), bytes(784)), mtime=0))
    write("idx", "truncated", idx(0x803, (3, 28, 28), bytes(784)))
    write("idx", "wrong-size", idx(0x803, (1, 32, 32), bytes(1024)))


def frame(kind, flags, dtype, src, dst, tag, count, payload_bytes, payload):
    head = struct.pack("<IHBBBBHiiIQQQ", 0x54534146, 3, kind, flags, dtype, 0, 0, src, dst, 0, tag, count, payload_bytes)
    return head + struct.pack("<II", 0, 0) + payload


def seeds_wire():
    write("wire", "data-f32", frame(1, 1, 0, 0, 1, 42, 2, 8, struct.pack("<2f", 1.5, -2)))
    write("wire", "heartbeat", frame(2, 0, 6, 1, 0, 0, 0, 0, b""))
    write("wire", "hello", frame(3, 1, 6, 0, 0, 0, 2, 2, b"{}"))
    write("wire", "bye", frame(4, 0, 6, 1, 1, 0, 0, 0, b""))
    write("wire", "count-overflow", frame(1, 0, 0, 0, 1, 0, 2**62, 2**64 - 8, b""))
    write("wire", "shared-flag", frame(1, 2, 0, 0, 1, 0, 1, 4, b"\0\0\0\0"))
    # Window and parameter-server requests as i64 words (the same bytes feed both).
    write("wire", "window-put", struct.pack("<14q", 1, 0, 4, 0, 7, 0, 0, -1, 0, 0, 0, 0, 0, 0))
    write("wire", "ps-push", struct.pack("<5q", 1, 3, 2, 1, 0))


def seeds_cluster():
    for f in sorted((REPO / "clusters").glob("*.toml")):
        write("cluster", f.stem + ".toml", f.read_bytes())
    write("cluster", "fat-tree.toml", '[hosts]\ncount = 4\n[network]\ntopology = "fat-tree"\nfat_tree = "2;2,2;1,2;1,1"\n')
    write("cluster", "failures.toml",
          '[hosts]\ncount = 3\n[[failures]]\nhost = 2\noff = "1.5s"\non = 4\n'
          '[[speed_profiles]]\nhost = 1\ntimes = [0, 10]\nfactors = [1, 0.5]\n')
    write("cluster", "stragglers.toml",
          '[hosts]\ncount = 8\ndistribution = "uniform:0.5-1.5"\nseed = 3\n'
          '[stragglers]\nprobability = 0.1\nfactor = 4\nperiod = "500ms"\nseed = 9\n')
    write("cluster", "big-integers.toml", "[hosts]\ncount = 4294967299\ncores = 9223372036854775807\n")
    write("cluster", "torus-overflow.toml",
          '[hosts]\ncount = 4\n[network]\ntopology = "torus"\ntorus = [65536, 65536, 65536, 65536]\n')


def checkpoint(sections):
    out = b"FASTCKPT" + struct.pack("<I", 2) + struct.pack("<I", 0) + struct.pack("<I", len(sections))
    for kind, name, values in sections:
        out += struct.pack("<BH", kind, len(name)) + name.encode() + struct.pack("<Q", len(values))
        fmt = {1: "<%df", 2: "<%dq", 3: "<%dd"}[kind]
        out += struct.pack(fmt % len(values), *values)
    return out + struct.pack("<I", zlib.crc32(out))


def seeds_checkpoint():
    write("checkpoint", "arrays", checkpoint([(1, "replica", [1, 2, 3]), (2, "step", [12]), (3, "adam/t", [0.5])]))
    write("checkpoint", "empty", checkpoint([]))
    write("checkpoint", "huge-count", checkpoint([(1, "x", [])])[:-12] + struct.pack("<Q", 2**61) + b"\0\0\0\0")


def seeds_spec():
    for n, spec in [(4, "ring"), (16, "torus2d:4x4"), (8, "exponential"), (8, "complete"), (7, "star"),
                    (8, "hypercube"), (9, "random-regular:3"), (8, "exponential-peer"), (6, "random-matching"),
                    (8, "cycle:ring;complete"), (4, "topk:k=3"), (4, "topk:ratio=0.01"), (4, "powersgd:rank=2"),
                    (4, "int8"), (4, "fp16"), (4, "randk:k=20"), (4, "threshold:value=0.5"), (4, "torus2d:99999x99999")]:
        write("spec", spec.replace(":", "_").replace(";", "_").replace("=", "_"), bytes([n - 1]) + spec.encode())


def seeds_config():
    for f in sorted((REPO / "examples").glob("*.toml")):
        write("config", f.name, f.read_bytes())
    write("config", "big-workers.toml", "workers = 4294967299\n")
    write("config", "inline.toml", 'strategy = "local_sgd"\n[strategy_options]\nperiod = 4\n')


def seeds_hello():
    process = {"rank": 0, "first_worker": 0, "workers": 2, "host_id": "h/ns", "hostname": "h", "ipc": "ipc:///tmp/a",
               "tcp": "tcp://127.0.0.1:5000", "pulse_ipc": "ipc:///tmp/b", "pulse_tcp": "tcp://127.0.0.1:5001",
               "public_key": "", "pid": 1234}
    head = frame(3, 1, 6, 0, 0, 0, 0, 0, b"")
    write("hello", "process", head + json.dumps({"world_size": 2, "process": process}).encode())
    big = dict(process, rank=2**40, workers=-1, pid=2**63)
    write("hello", "big-integers", head + json.dumps({"world_size": 4294967299, "process": big}).encode())
    write("hello", "float-rank", head + json.dumps({"world_size": 2.5, "process": dict(process, rank=1.5)}).encode())
    write("hello", "not-json", head + b"{\"world_size\": ")


PLATFORM_HEAD = "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"


def seeds_platform():
    def platform(body):
        return PLATFORM_HEAD + '<platform version="4.1">\n' + body + "</platform>\n"
    write("platform", "two-hosts.xml", platform(
        '<zone id="z" routing="Full">\n <host id="b-10" speed="1Gf"/>\n <host id="b-2" speed="2Gf"/>\n'
        ' <link id="l" bandwidth="100MBps" latency="1ms"/>\n <route src="b-2" dst="b-10"><link_ctn id="l"/></route>\n'
        '</zone>\n'))
    write("platform", "cluster.xml", platform(
        '<cluster id="c" prefix="node-" suffix="" radical="0-3" speed="1Gf" bw="125MBps" lat="50us"/>\n'))
    write("platform", "no-route.xml", platform(
        '<zone id="z" routing="Full">\n <host id="a" speed="1Gf"/>\n <host id="b" speed="1Gf"/>\n</zone>\n'))
    write("platform", "no-host.xml", platform('<zone id="z" routing="Full">\n</zone>\n'))
    write("platform", "bad-bandwidth.xml", platform(
        '<zone id="z" routing="Full">\n <host id="a" speed="1Gf"/>\n <link id="l" bandwidth="oops"/>\n</zone>\n'))
    write("platform", "unknown-link.xml", platform(
        '<zone id="z" routing="Full">\n <host id="a" speed="1Gf"/>\n <host id="b" speed="1Gf"/>\n'
        ' <route src="a" dst="b"><link_ctn id="missing"/></route>\n</zone>\n'))
    write("platform", "truncated.xml", platform('<zone id="z" routing="Full">\n <host id="a" speed="1Gf"/>\n')[:-12])
    write("platform", "not-xml.xml", "garbage")


def seeds_dataset():
    for name, spec in [("default", "fashion-mnist"), ("synthetic", "synthetic"),
                       ("synthetic-all", "synthetic:shape=1x28x28,classes=10,train=60000,test=10000,noise=0.25,seed=1"),
                       ("synthetic-small", "synthetic:shape=3x8x8,classes=4,train=512,test=128,seed=3"),
                       ("npz", "npz:train=/nonexistent/a.npz,test=/nonexistent/b.npz"),
                       ("npy", "npy:train_x=a,train_y=b,test_x=c,test_y=d"),
                       ("classes-out", "synthetic:classes=1"), ("too-big", "synthetic:shape=100000x100000,train=100000000"),
                       ("noise-nan", "synthetic:noise=nan"), ("repeated", "synthetic:seed=1,seed=2"),
                       ("trailing", "synthetic:seed=1,"), ("unknown", "imagenet")]:
        write("dataset", name, spec)


def seeds_manifest():
    run = {"format": 1, "workers": 2, "model": "mlp", "dataset": "fashion-mnist", "seed": 1, "batch": 64,
           "strategy": "allreduce", "optimizer": "momentum", "dgc_warmup_epochs": 0, "codec": "none",
           "parameters": 6, "layout": "0123456789abcdef", "train_samples": 100, "fingerprint": "fedcba9876543210"}
    manifest = {"format": 2, "step": 10, "workers": 2, "run": run}
    write("manifest", "manifest.json", json.dumps(manifest, indent=1))
    write("manifest", "other-seed.json", json.dumps(dict(manifest, run=dict(run, seed=2))))
    write("manifest", "no-run.json", json.dumps({"format": 2, "step": 10, "workers": 2}))
    write("manifest", "run-number.json", json.dumps(dict(manifest, run=5)))
    write("manifest", "array.json", "[1, 2, 3]")
    write("manifest", "string.json", '"manifest"')
    write("manifest", "truncated.json", json.dumps(manifest)[:40])
    write("manifest", "deep.json", "[" * 64 + "]" * 64)


def seeds_stream():
    # fuzz_stream.cpp: [u8 protection, u8 tamper] then records: u16 payload length (top bit: keep the
    # frame header's checksum as given), the plain head (u32 kind, u32 0, u64 after, the 56-byte
    # frame header), the payload.
    def record(kind, header, payload):
        return struct.pack("<HIIQ", len(payload), kind, 0, 0) + header + payload
    data = struct.pack("<2f", 1.5, -2)
    one = record(2, frame(1, 0, 0, 1, 0, 7, 2, 8, b""), data)
    bye = record(3, frame(4, 0, 6, 1, 0, 0, 2, 2, b""), b"ok")
    for p, name in ((0, "checksum"), (1, "aes"), (2, "chacha")):
        write("stream", "data-bye-" + name, bytes([p, 0]) + one + one + bye)
    write("stream", "tampered", bytes([0, 7]) + one + one)
    write("stream", "short-payload", bytes([0, 0]) + record(2, frame(1, 0, 0, 1, 0, 7, 64, 256, b""), data))
    write("stream", "huge-payload", bytes([0, 0]) + record(2, frame(1, 0, 6, 1, 0, 7, 2**33, 2**33, b""), b""))
    write("stream", "second-open", bytes([1, 0]) + record(1, frame(3, 0, 6, 1, 0, 0, 0, 0, b""), b"") + one)
    write("stream", "header-checksum-as-given", bytes([0, 0]) + one[:1] + bytes([one[1] | 0x80]) + one[2:])


x, y = seeds_npy()
seeds_npz(x, y)
seeds_idx()
seeds_wire()
seeds_cluster()
seeds_checkpoint()
seeds_spec()
seeds_config()
seeds_hello()
seeds_stream()
seeds_manifest()
seeds_dataset()
seeds_platform()
