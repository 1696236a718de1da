"""setuptools' half of `pip install --no-build-isolation .` (pyproject.toml; docs/python.md).

The version is CMakeLists.txt's project(VERSION), the one place it is written. The build runs CMake
with this interpreter (Python3_EXECUTABLE; FAST_TORCH_PYTHON, so that a torch installed for it is
found when the system has no libtorch) in FAST_BUILD_DIR (default: build/pip under the sources),
builds the extension module fast._fast and the `fast` command with its training helper, and lays
them out as an installation does: the module in the package, `fast` in the environment's bin/ and
the helper in libexec/fast/ beside it (the command finds its helper there, as in `cmake --install`).
FAST_BUILD_DIR may name an existing build folder of these sources: only what changed is rebuilt. A
folder configured for an interpreter that is gone or of another Python version is configured again
for this one.
FAST_BUILD_JOBS: parallel compile jobs (default: the machine's cores).
"""
import os
import re
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.abspath(os.environ.get("FAST_BUILD_DIR") or os.path.join(HERE, "build", "pip"))
TARGETS = ["fast_python", "fast", "fast-train"]


def project_version():
    with open(os.path.join(HERE, "CMakeLists.txt"), encoding="utf-8") as f:
        found = re.search(r"project\(\s*fast\s+VERSION\s+([0-9][0-9.]*)", f.read())
    if not found:
        raise RuntimeError("CMakeLists.txt: expected project(fast VERSION X.Y.Z)")
    return found.group(1)


def helper_relative_dir():
    """Where `fast` looks for its helper, relative to its own folder, in this build: from the CMake cache."""
    cache = os.path.join(BUILD, "CMakeCache.txt")
    with open(cache, encoding="utf-8") as f:
        text = f.read()

    def entry(name, default):
        m = re.search(rf"^{name}:[A-Z]+=(.*)$", text, re.M)
        return m.group(1) if m else default

    prefix = entry("CMAKE_INSTALL_PREFIX", "/usr/local")
    bindir = os.path.join(prefix, entry("CMAKE_INSTALL_BINDIR", "bin"))
    libexec = os.path.join(prefix, entry("CMAKE_INSTALL_LIBEXECDIR", "libexec"), "fast")
    return os.path.relpath(libexec, bindir)


class CMakeBuild(build_ext):
    """Builds fast._fast, `fast` and `fast-train` with CMake and copies them where setuptools wants them."""

    def run(self):
        if getattr(self, "editable_mode", False):
            # SystemExit, not an exception: setuptools would add that editable installs are new, ask for a report.
            sys.exit("fast: an editable install (pip install -e) is not supported: it would leave out the `fast` "
                     "command; install with `pip install --no-build-isolation .` (docs/python.md)")
        # FAST_TORCH_PYTHON is read only where libtorch is not on the default paths (cmake/torch.cmake):
        # --no-warn-unused-cli keeps CMake from calling it unused elsewhere.
        interpreter = [f"-DPython3_EXECUTABLE={sys.executable}", f"-DFAST_TORCH_PYTHON={sys.executable}",
                       "--no-warn-unused-cli"]
        if not os.path.exists(os.path.join(BUILD, "CMakeCache.txt")):
            os.makedirs(BUILD, exist_ok=True)
            self.spawn(["cmake", "-S", HERE, "-B", BUILD, "-DCMAKE_BUILD_TYPE=Release", "-DFAST_BUILD_TESTS=OFF"]
                       + interpreter + (["-G", "Ninja"] if _has("ninja") else []))
        elif not _cached_interpreter_usable():
            # A folder configured for an interpreter that is gone (a removed venv) or of another
            # Python version: the module would not build, or not import, for this one.
            self.spawn(["cmake", "-S", HERE, "-B", BUILD] + interpreter)
        jobs = os.environ.get("FAST_BUILD_JOBS") or str(os.cpu_count() or 1)
        self.spawn(["cmake", "--build", BUILD, "-j", jobs, "--target"] + TARGETS)
        for ext in self.extensions:
            self.build_extension(ext)

    def build_extension(self, ext):
        built = [f for f in os.listdir(os.path.join(BUILD, "python", "fast")) if f.startswith("_fast.") and f.endswith(".so")]
        if len(built) != 1:
            raise RuntimeError(f"expected one _fast*.so in {BUILD}/python/fast, found {built}")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        self.copy_file(os.path.join(BUILD, "python", "fast", built[0]), target)


def _cached_interpreter_usable():
    """Whether the interpreter the build folder was configured for (Python3_EXECUTABLE, as this file
    or the user gave it, else the one CMake found) still runs and is of this interpreter's Python
    version; true where the cache names none (nothing to judge: the folder is left as it is)."""
    with open(os.path.join(BUILD, "CMakeCache.txt"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^Python3_EXECUTABLE:[A-Z]+=(.+)$", text, re.M) or \
        re.search(r"^_Python3_EXECUTABLE:INTERNAL=(.+)$", text, re.M)
    if not m:
        return True
    try:
        out = subprocess.run([m.group(1), "-c", "import sys; print(sys.version_info[:2])"], capture_output=True,
                             text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and out.stdout.strip() == str(sys.version_info[:2])


def _made(folder):
    """`folder`, created if missing."""
    os.makedirs(folder, exist_ok=True)
    return folder


def _has(program):
    return any(os.access(os.path.join(d, program), os.X_OK) for d in os.environ.get("PATH", "").split(os.pathsep))


def command_files():
    """data_files: `fast` into bin/, its helper where `fast` looks for it (libexec/fast/ in a default build)."""
    configured = os.path.exists(os.path.join(BUILD, "CMakeCache.txt"))
    helper = helper_relative_dir() if configured else os.path.join("..", "libexec", "fast")
    # setuptools takes only paths relative to this folder (FAST_BUILD_DIR may lie outside it).
    built = os.path.relpath(os.path.join(BUILD, "bin"), HERE)
    return [("bin", [os.path.join(built, "fast")]),
            (os.path.normpath(os.path.join("bin", helper)), [os.path.join(built, helper, "fast-train")])]


setup(
    version=project_version(),
    packages=["fast"],
    package_dir={"fast": "python/fast"},
    # setuptools' own files beside the CMake build: not in the sources' build/ (make build's) nor
    # fast.egg-info among the sources.
    options={"build": {"build_base": os.path.join(BUILD, "setuptools")},
             "egg_info": {"egg_base": _made(os.path.join(BUILD, "setuptools"))}},
    ext_modules=[Extension("fast._fast", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    data_files=command_files(),
)
