#include "arrays.hpp"

#include <string>

#include "fast/core/error.hpp"

namespace fast::python {

namespace {

// FAST's dtype of a buffer format character, or false when FAST does not move that type.
bool dtype_of_format(const py::buffer_info& info, core::DType& out) {
  std::string format = info.format;
  if (!format.empty() && (format[0] == '<' || format[0] == '=' || format[0] == '@')) format.erase(0, 1);
  if (format == "f" && info.itemsize == 4)
    out = core::DType::f32;
  else if (format == "d" && info.itemsize == 8)
    out = core::DType::f64;
  else if ((format == "i" || format == "l") && info.itemsize == 4)
    out = core::DType::i32;
  else if ((format == "l" || format == "q") && info.itemsize == 8)
    out = core::DType::i64;
  else if (format == "B" && info.itemsize == 1)
    out = core::DType::u8;
  else if (format == "e" && info.itemsize == 2)
    out = core::DType::f16;
  else
    return false;
  return true;
}

// A torch.Tensor, recognised by its type's module and name (no import of torch here).
bool is_torch_tensor(const py::handle& object) {
  const py::handle type = py::type::handle_of(object);
  return py::str(type.attr("__module__")).cast<std::string>() == "torch" &&
         py::str(type.attr("__name__")).cast<std::string>() == "Tensor";
}

std::string type_name(const py::handle& object) {
  const py::handle type = py::type::handle_of(object);
  return py::str(type.attr("__module__")).cast<std::string>() + "." +
         py::str(type.attr("__name__")).cast<std::string>();
}

// A CPU, contiguous tensor's numpy view (shared memory).
py::object torch_numpy(const py::handle& tensor, const char* what) {
  const std::string device = py::str(tensor.attr("device")).cast<std::string>();
  FAST_ENFORCE(device == "cpu",
               "{}: expected a tensor in CPU memory, got one on device '{}' (FAST's buffers live in host memory; "
               "copy it with .cpu(), or keep the model on the CPU)",
               what, device);
  FAST_ENFORCE(tensor.attr("is_contiguous")().cast<bool>(),
               "{}: expected a contiguous tensor, got one with shape {} and strides {} (use .contiguous())", what,
               py::str(tensor.attr("shape")).cast<std::string>(), py::str(tensor.attr("stride")()).cast<std::string>());
  try {
    return tensor.attr("detach")().attr("numpy")();
  } catch (const py::error_already_set& e) {  // a dtype numpy has not (bfloat16, complex32, quantised)
    if (!e.matches(PyExc_TypeError)) throw;
    FAST_THROW(InvalidArgument,
               "{}: expected float32, float64, float16, int32, int64 or uint8 elements, got a {} tensor (convert it, "
               "e.g. with .float())",
               what, py::str(tensor.attr("dtype")).cast<std::string>());
  }
}

}  // namespace

Array as_array(const py::handle& object, const char* what, bool writable) {
  py::object source = py::reinterpret_borrow<py::object>(object);
  if (is_torch_tensor(object)) source = torch_numpy(object, what);
  FAST_ENFORCE(PyObject_CheckBuffer(source.ptr()) == 1,
               "{}: expected a numpy array, a torch.Tensor or another buffer, got {}", what, type_name(object));
  // Requested read-only: a read-only buffer is refused below with a message naming the argument.
  const py::buffer_info info = py::reinterpret_borrow<py::buffer>(source).request(false);
  Array a;
  FAST_ENFORCE(dtype_of_format(info, a.dtype),
               "{}: expected float32, float64, float16, int32, int64 or uint8 elements, got buffer format '{}' "
               "({} bytes each)",
               what, info.format, info.itemsize);
  // C-contiguous: the strides of a dense row-major array (any stride on a dimension of size 1).
  py::ssize_t expected = info.itemsize;
  for (py::ssize_t d = info.ndim - 1; d >= 0; --d) {
    const auto i = static_cast<std::size_t>(d);
    FAST_ENFORCE(info.shape[i] <= 1 || info.strides[i] == expected,
                 "{}: expected a C-contiguous array, got shape {} with strides {} (use numpy.ascontiguousarray or "
                 ".contiguous())",
                 what, fmt::join(info.shape, "x"), fmt::join(info.strides, ","));
    expected *= info.shape[i];
  }
  FAST_ENFORCE(!writable || !info.readonly,
               "{}: FAST writes into this array, got a read-only one (copy it, e.g. numpy.array(a))", what);
  a.owner = std::move(source);
  a.data = info.ptr;
  a.numel = static_cast<std::size_t>(info.size);
  a.shape = info.shape;
  return a;
}

Array as_float32(const py::handle& object, const char* what, bool writable) {
  Array a = as_array(object, what, writable);
  FAST_ENFORCE(a.dtype == core::DType::f32,
               "{}: expected float32 elements (FAST's flat model buffers), got {}; convert the model with "
               ".float() or the array with .astype(numpy.float32)",
               what, core::name_of(a.dtype));
  return a;
}

py::dtype numpy_dtype(core::DType dtype) {
  switch (dtype) {
    case core::DType::f32: return py::dtype::of<float>();
    case core::DType::f64: return py::dtype::of<double>();
    case core::DType::f16: return py::dtype("float16");
    case core::DType::i32: return py::dtype::of<std::int32_t>();
    case core::DType::i64: return py::dtype::of<std::int64_t>();
    case core::DType::u8: return py::dtype::of<std::uint8_t>();
    case core::DType::bf16: break;
  }
  FAST_THROW(InvalidArgument, "dtype {} has no numpy equivalent", core::name_of(dtype));
}

py::array new_array(core::DType dtype, const std::vector<py::ssize_t>& shape) {
  py::array out(numpy_dtype(dtype), shape);
  std::memset(out.mutable_data(), 0, static_cast<std::size_t>(out.nbytes()));
  return out;
}

}  // namespace fast::python
