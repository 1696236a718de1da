#pragma once
// Registers fast.Context, fast.Work, fast.Communicator and fast.Window (mover.cpp).

#include <memory>
#include <vector>

#include <pybind11/pybind11.h>

#include "fast/core/work.hpp"
#include "process.hpp"

namespace fast::python {

// A Work in Python: the operation and the Python objects whose memory it uses, released after it.
// The operation ends with its world (ContextHandle::on_close: a worker function that raised keeps
// its Works in the traceback): dropped there, while the world still exists, after which get() is
// InvalidUsage (the operation held references into the world's memory).
struct PyWork {
  std::vector<py::object> keep;  // declared first: destroyed after the operation
  // The operation; emptied when its world ends. Shared with the closer (a PyWork moves).
  std::shared_ptr<std::unique_ptr<core::Work>> slot;
  ContextRef ctx;
  std::uint64_t closer = 0;
  PyWork(core::Work w, std::vector<py::object> k, ContextRef c);
  PyWork(PyWork&&) = default;
  ~PyWork();
  // The operation; InvalidUsage once its world ended.
  core::Work& get() const;
};

void bind_mover(py::module_& m);

}  // namespace fast::python
