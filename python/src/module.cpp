// The extension module fast._fast: FAST's exceptions as Python exceptions of the same names, and
// the registrations of the other files (process, mover, worker, metrics). The Python package
// python/fast/__init__.py re-exports it.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "fast/core/error.hpp"
#include "fast/core/exit_code.hpp"
#include "fast/core/version.hpp"
#include "fast/training/data_order.hpp"
#include "metrics.hpp"
#include "mover.hpp"
#include "process.hpp"
#include "worker.hpp"

namespace fast::python {

namespace {

// A new exception type fast.<name> deriving from `bases` (a tuple), added to the module.
PyObject* new_exception(py::module_& m, const char* name, const py::tuple& bases, const char* doc) {
  const std::string qualified = std::string("fast.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (type == nullptr) throw py::error_already_set();
  m.add_object(name, py::handle(type));
  return type;
}

void bind_exceptions(py::module_& m) {
  const py::object builtins = py::module_::import("builtins");
  PyObject* error = new_exception(m, "Error", py::make_tuple(builtins.attr("RuntimeError")), "Base of FAST's errors.");
  const py::handle base(error);
  static PyObject* const invalid_argument =
      new_exception(m, "InvalidArgument", py::make_tuple(base, builtins.attr("ValueError")),
                    "Bad input: fix the value, shape or name.");
  static PyObject* const invalid_usage =
      new_exception(m, "InvalidUsage", py::make_tuple(base), "Calls in the wrong order or on the wrong object.");
  static PyObject* const io_error =
      new_exception(m, "IoError", py::make_tuple(base, builtins.attr("OSError")), "A peer, link or file is broken.");
  static PyObject* const timeout_error = new_exception(
      m, "TimeoutError", py::make_tuple(base, builtins.attr("TimeoutError")), "An operation did not complete in time.");
  static PyObject* const peer_lost = new_exception(m, "PeerLost", py::make_tuple(base), "A peer left or died.");
  static PyObject* const remote_error = new_exception(m, "RemoteError", py::make_tuple(base),
                                                      "Another worker failed; this one was released from its wait.");
  static PyObject* const base_error = error;
  // How a Python program that ends on one of these ends (fast/__init__.py): the exit code and the
  // kind of its last line, as `fast`'s (docs/errors.md); `fast launch` reads both.
  namespace exit_code = core::exit_code;
  py::dict exits;
  exits[py::handle(invalid_argument)] = py::make_tuple(static_cast<int>(exit_code::bad_input), "error");
  exits[py::handle(invalid_usage)] = py::make_tuple(static_cast<int>(exit_code::bad_input), "error");
  exits[py::handle(io_error)] = py::make_tuple(static_cast<int>(exit_code::io_or_peer_lost), exit_code::io_error_kind);
  exits[py::handle(timeout_error)] = py::make_tuple(static_cast<int>(exit_code::timeout), "timeout");
  exits[py::handle(peer_lost)] =
      py::make_tuple(static_cast<int>(exit_code::io_or_peer_lost), exit_code::peer_lost_kind);
  exits[py::handle(remote_error)] =
      py::make_tuple(static_cast<int>(exit_code::io_or_peer_lost), exit_code::peer_lost_kind);
  exits[base] = py::make_tuple(static_cast<int>(exit_code::failed), "error");
  m.attr("_exit_status") = exits;
  py::register_exception_translator([](std::exception_ptr p) {
    if (!p) return;
    try {
      std::rethrow_exception(p);
    } catch (const core::InvalidArgument& e) {
      PyErr_SetString(invalid_argument, core::user_message(e).c_str());
    } catch (const core::InvalidUsage& e) {
      PyErr_SetString(invalid_usage, core::user_message(e).c_str());
    } catch (const core::IoError& e) {
      PyErr_SetString(io_error, core::user_message(e).c_str());
    } catch (const core::TimeoutError& e) {
      PyErr_SetString(timeout_error, core::user_message(e).c_str());
    } catch (const core::PeerLost& e) {
      PyErr_SetString(peer_lost, core::user_message(e).c_str());
    } catch (const core::RemoteError& e) {
      PyErr_SetString(remote_error, core::user_message(e).c_str());
    } catch (const core::Error& e) {
      PyErr_SetString(base_error, core::user_message(e).c_str());
    }
  });
}

void bind_data_order(py::module_& m) {
  m.def(
      "epoch_permutation",
      [](std::int64_t n, std::uint64_t seed, std::int64_t epoch) {
        const std::vector<std::int64_t> p = training::epoch_permutation(n, seed, epoch);
        py::array_t<std::int64_t> out(static_cast<py::ssize_t>(p.size()));
        std::copy(p.begin(), p.end(), out.mutable_data());
        return out;
      },
      py::arg("n"), py::arg("seed"), py::arg("epoch"),
      R"(The order in which fast train visits n training samples in epoch `epoch` (0-based) for `seed`: worker r
of W takes batch i of the epoch at positions [i*W*B + r*B, i*W*B + (r+1)*B) of it (B: the batch).)");
}

}  // namespace

}  // namespace fast::python

PYBIND11_MODULE(_fast, m) {
  m.doc() = "FAST's C++ core: contexts, the tensor mover, collectives, workers and metrics (docs/python.md).";
  // Classes before the functions whose signatures name them (pybind11 writes a signature when the
  // function is bound: a class bound later shows as its C++ name, fast::python::ContextHandle).
  fast::python::bind_exceptions(m);
  fast::python::bind_mover(m);
  fast::python::bind_process(m);
  fast::python::bind_worker(m);
  fast::python::bind_metrics(m);
  fast::python::bind_data_order(m);
  // The version of CMakeLists.txt's project(VERSION), as `fast --version` prints it; the source
  // commit ("" when not built from a git checkout).
  m.attr("__version__") = std::string(fast::core::version());
  m.attr("source_commit") = std::string(fast::core::source_commit());
}
