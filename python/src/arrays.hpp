#pragma once
// Python objects as FAST tensor views, for the binding's other files. A tensor argument may be any
// object that exposes a C-contiguous buffer (a numpy array, a bytearray, a memoryview) or a
// torch.Tensor in CPU memory (taken through tensor.detach().numpy(), which shares its storage).
// Nothing is copied: the view points into the object's memory, and the Array keeps the object
// alive (hold it as long as FAST may read or write the memory: until the Work completes).
//
// Errors (InvalidArgument, raised in Python as fast.InvalidArgument) name the argument, what was
// expected and what was given: a dtype FAST does not move (complex, bool, ...), a non-contiguous
// array, a read-only buffer where FAST writes, a tensor on a device other than the CPU.
//
// Thread-safety: call with the GIL held; the views may be used without it.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "fast/core/dtype.hpp"
#include "fast/core/tensor_view.hpp"

namespace fast::python {

namespace py = pybind11;

// A Python object's memory as a flat tensor of one dtype.
struct Array {
  py::object owner;  // keeps the memory alive
  void* data = nullptr;
  std::size_t numel = 0;
  core::DType dtype = core::DType::f32;
  std::vector<py::ssize_t> shape;

  core::MutableView mutable_view() const { return {data, numel, dtype}; }
  core::ConstView const_view() const { return {data, numel, dtype}; }
};

// `what` names the argument in errors ("send: data"). writable: FAST will write into it.
Array as_array(const py::handle& object, const char* what, bool writable);
// As as_array, and the dtype must be float32 (the flat model buffers of a Worker).
Array as_float32(const py::handle& object, const char* what, bool writable);

// A new numpy array of `dtype` with `shape`, zero-filled.
py::array new_array(core::DType dtype, const std::vector<py::ssize_t>& shape);
// The numpy dtype of a FAST dtype (f16 and bf16: None, not representable: InvalidArgument).
py::dtype numpy_dtype(core::DType dtype);

}  // namespace fast::python
