#pragma once
// Registers fast.Context, fast.Work, fast.Communicator and fast.Window (mover.cpp).

#include <memory>
#include <vector>

#include <pybind11/pybind11.h>

#include "fast/core/work.hpp"
#include "process.hpp"

namespace fast::python {

// A Work in Python: the operation and the Python objects whose memory it uses, released after it.
struct PyWork {
  std::vector<py::object> keep;  // declared first: destroyed after `work`
  std::shared_ptr<core::Work> work;
  PyWork(std::shared_ptr<core::Work> w, std::vector<py::object> k) : keep(std::move(k)), work(std::move(w)) {}
  PyWork(PyWork&&) = default;
  ~PyWork();
};

void bind_mover(py::module_& m);

}  // namespace fast::python
