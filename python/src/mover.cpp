// The tensor mover and the collectives in Python: fast.Context (point-to-point messages by peer and
// tag), fast.Work, fast.Communicator (all-reduce, broadcast, all-gather, barrier) and fast.Window
// (one-sided put, get, accumulate). Every call that may wait releases the GIL.
#include "mover.hpp"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "arrays.hpp"
#include "fast/collective/communicator.hpp"
#include "fast/collective/window.hpp"
#include "fast/core/buffer.hpp"
#include "fast/core/error.hpp"
#include "fast/runtime/tag.hpp"
#include "interrupt.hpp"

namespace fast::python {

namespace {

// User tags: the low 56 bits (TagKind::user is 0 in the top byte, runtime/tag.hpp).
runtime::Tag user_tag(std::int64_t tag) {
  FAST_ENFORCE(tag >= 0 && tag < (std::int64_t{1} << 56), "tag: expected an integer in [0, 2**56), got {}", tag);
  return static_cast<runtime::Tag>(tag);
}

runtime::Combine parse_combine(const std::string& combine) {
  if (combine == "copy") return runtime::Combine::copy;
  if (combine == "sum") return runtime::Combine::sum;
  FAST_THROW(InvalidArgument, "combine: expected 'copy' or 'sum', got '{}'", combine);
}

collective::ReduceOp parse_op(const std::string& op) {
  if (op == "sum") return collective::ReduceOp::sum;
  if (op == "mean") return collective::ReduceOp::avg;
  FAST_THROW(InvalidArgument, "op: expected 'sum' or 'mean', got '{}'", op);
}

// A Communicator on a Python Context.
struct PyCommunicator {
  ContextRef ctx;
  std::unique_ptr<collective::Communicator> comm;
  collective::Communicator& get() const {
    (void)ctx->get();
    return *comm;
  }
};

// A Window on a Python Communicator; keeps the exposed array and the communicator alive.
struct PyWindow {
  std::shared_ptr<PyCommunicator> comm;
  Array local;
  std::unique_ptr<collective::Window> window;
  std::uint64_t closer = 0;  // ContextHandle::on_close: the window (its service) ends with its world
  PyWindow() = default;
  PyWindow(const PyWindow&) = delete;
  PyWindow& operator=(const PyWindow&) = delete;
  ~PyWindow() {
    if (comm) comm->ctx->forget(closer);
    reset_without_gil(window);
  }
  collective::Window& get() const {
    (void)comm->get();
    FAST_ENFORCE_AS(core::InvalidUsage, window != nullptr, "fast.Window: used after close()");
    return *window;
  }
};

PyWork make_work(core::Work work, std::vector<py::object> keep, const ContextRef& ctx) {
  return PyWork(std::move(work), std::move(keep), ctx);
}

// One one-sided operation on `array` (checked as `what`; writable when the window writes into it):
// op(window, array) -> Work, called without the GIL; the Work keeps the array alive.
template <class Op>
PyWork window_op(const PyWindow& w, const py::object& array, const char* what, bool writable, Op op) {
  collective::Window& window = w.get();
  Array a = as_array(array, what, writable);
  core::Work work;
  {
    py::gil_scoped_release release;
    work = op(window, a);
  }
  return make_work(std::move(work), {a.owner}, w.comm->ctx);
}

void bind_context(py::module_& m) {
  py::class_<ContextHandle, ContextRef>(m, "Context", R"(This worker's view of its world: ranks, time and
point-to-point messages (the tensor mover). From fast.init() or the argument of fast.run's function.)")
      .def_property_readonly(
          "rank", [](const ContextHandle& c) { return c.get().rank(); }, "This worker's rank.")
      .def_property_readonly(
          "size", [](const ContextHandle& c) { return c.get().size(); }, "Workers in the world.")
      .def_property_readonly(
          "local_size", [](const ContextHandle& c) { return c.get().local_size(); }, "Workers in this process.")
      .def_property_readonly(
          "runtime", [](const ContextHandle& c) { return c.get().runtime_name(); }, "The runtime's name ('zmq', ...).")
      .def_property_readonly("open", &ContextHandle::open,
                             "False once the world has ended: fast.shutdown(), fast.run returned, or Ctrl-C "
                             "interrupted it.")
      .def(
          "now", [](const ContextHandle& c) { return c.get().now(); },
          "Seconds since the world started, on the runtime's clock (simulated under sim).")
      .def(
          "sleep",
          [](const ContextHandle& c, double s) {
            runtime::Context& ctx = c.get();
            FAST_ENFORCE(std::isfinite(s) && s <= 1e9,
                         "Context.sleep: seconds: expected a number of seconds up to 1e9 (31 years), got {}", s);
            interruptible([&] { ctx.sleep(s); });
          },
          py::arg("seconds"),
          "Waits this many seconds on the runtime's clock (simulated under sim); 0 or less returns at once, more "
          "than 1e9, inf or nan is fast.InvalidArgument.")
      .def(
          "alive",
          [](const ContextHandle& c, int peer) {
            runtime::check_peer(c.get(), peer, "alive");
            return c.get().alive(peer);
          },
          py::arg("peer"), "Whether worker `peer` is still in the run (False once it was lost).")
      .def(
          "bytes_sent", [](const ContextHandle& c) { return c.get().bytes_sent(); },
          "Payload bytes this worker sent to all peers so far.")
      .def(
          "send",
          [](const ContextRef& c, int peer, std::int64_t tag, const py::object& data) {
            runtime::Context& ctx = c->get();
            runtime::check_peer(ctx, peer, "send");
            Array a = as_array(data, "send: data", false);
            core::Work w;
            {
              py::gil_scoped_release release;
              w = ctx.send(peer, user_tag(tag), a.const_view());
            }
            return make_work(std::move(w), {a.owner}, c);
          },
          py::arg("peer"), py::arg("tag"), py::arg("data"),
          "Sends data to peer under tag (an int in [0, 2**56)). data must stay unchanged until the Work completes.")
      .def(
          "recv",
          [](const ContextRef& c, int peer, std::int64_t tag, const py::object& out, const std::string& combine) {
            runtime::Context& ctx = c->get();
            runtime::check_peer(ctx, peer, "recv");
            Array a = as_array(out, "recv: out", true);
            core::Work w;
            {
              py::gil_scoped_release release;
              w = ctx.recv(peer, user_tag(tag), a.mutable_view(), parse_combine(combine));
            }
            return make_work(std::move(w), {a.owner}, c);
          },
          py::arg("peer"), py::arg("tag"), py::arg("out"), py::arg("combine") = "copy",
          "Receives peer's message under tag into out (same dtype and length); combine='sum' adds it into out.")
      .def(
          "recv_any",
          [](const ContextHandle& c, std::int64_t tag) {
            runtime::Context& ctx = c.get();
            core::Buffer buffer;
            int source = -1;
            interruptible([&] { ctx.recv_any(user_tag(tag), buffer, source).wait(); });
            py::array out = new_array(buffer.dtype(), {static_cast<py::ssize_t>(buffer.numel())});
            std::memcpy(out.mutable_data(), buffer.data(), buffer.bytes());
            return py::make_tuple(source, out);
          },
          py::arg("tag"), "Waits for the oldest message under tag from any peer; returns (source, 1-D array).");
}

void bind_work(py::module_& m) {
  py::class_<PyWork>(m, "Work", "An operation under way. Holds the arrays it reads or writes until it completes.")
      .def(
          "wait",
          [](const PyWork& w, std::optional<double> timeout) {
            core::Work& work = w.get();
            return interruptible([&] {
              if (timeout) return work.wait(*timeout);
              work.wait();
              return true;
            });
          },
          py::arg("timeout") = py::none(),
          "Waits until it completes (timeout: at most that many seconds; returns False if still running). Raises "
          "the operation's error.")
      .def(
          "is_completed", [](const PyWork& w) { return w.get().is_completed(); },
          "Whether it completed (successfully or not), without waiting.");
}

void bind_communicator(py::module_& m) {
  py::class_<PyCommunicator, std::shared_ptr<PyCommunicator>>(m, "Communicator", R"(Collectives among every
worker of a Context. Every worker calls the same collectives in the same order with arrays of the same
dtype and length.)")
      .def(py::init([](const ContextRef& ctx, const std::string& allreduce_algorithm) {
             collective::CommunicatorOptions options;
             options.allreduce_algorithm = collective::parse_allreduce_algorithm(allreduce_algorithm);
             return std::make_shared<PyCommunicator>(
                 PyCommunicator{ctx, std::make_unique<collective::Communicator>(ctx->get(), options)});
           }),
           py::arg("context"), py::arg("allreduce_algorithm") = "auto")
      .def_property_readonly("rank", [](const PyCommunicator& c) { return c.get().rank(); })
      .def_property_readonly("size", [](const PyCommunicator& c) { return c.get().size(); })
      .def(
          "allreduce",
          [](const PyCommunicator& c, const py::object& data, const std::string& op) {
            collective::Communicator& comm = c.get();
            Array a = as_array(data, "allreduce: data", true);
            const collective::AllreduceOptions options{.op = parse_op(op)};
            interruptible([&] { comm.allreduce(a.mutable_view(), options); });
          },
          py::arg("data"), py::arg("op") = "sum", "In place: data = the sum (op='mean': the mean) over the workers.")
      .def(
          "broadcast",
          [](const PyCommunicator& c, const py::object& data, int root) {
            collective::Communicator& comm = c.get();
            runtime::check_peer(comm.context(), root, "broadcast: root");
            Array a = as_array(data, "broadcast: data", true);
            interruptible([&] { comm.broadcast(a.mutable_view(), root); });
          },
          py::arg("data"), py::arg("root") = 0, "In place: data = root's data.")
      .def(
          "allgather",
          [](const PyCommunicator& c, const py::object& data) {
            collective::Communicator& comm = c.get();
            Array a = as_array(data, "allgather: data", false);
            std::vector<py::ssize_t> shape{comm.size()};
            shape.insert(shape.end(), a.shape.begin(), a.shape.end());
            py::array out = new_array(a.dtype, shape);
            core::MutableView view(out.mutable_data(), a.numel * static_cast<std::size_t>(comm.size()), a.dtype);
            interruptible([&] { comm.allgather(a.const_view(), view); });
            return out;
          },
          py::arg("data"), "Returns an array of shape (size, *data.shape): row r is worker r's data.")
      .def("barrier", [](const PyCommunicator& c) {
        collective::Communicator& comm = c.get();
        interruptible([&] { comm.barrier(); });
      });
}

void bind_window(py::module_& m) {
  py::class_<PyWindow, std::shared_ptr<PyWindow>>(m, "Window", R"(One-sided access to an array every worker
exposes under one name (collective to create and to close). The owner's array must stay alive while the
window is open; the window holds it.)")
      .def(py::init([](const std::shared_ptr<PyCommunicator>& comm, const std::string& name, const py::object& local,
                       const std::string& codec) {
             auto w = std::make_shared<PyWindow>();
             w->comm = comm;
             w->local = as_array(local, "Window: local", true);
             collective::Communicator& c = comm->get();
             interruptible([&] {
               w->window = std::make_unique<collective::Window>(c, name, w->local.mutable_view(),
                                                                collective::WindowOptions{.codec = codec});
             });
             // A window kept after its world ended (by the traceback of a worker function that
             // raised) would serve requests on a Context that no longer exists.
             w->closer = comm->ctx->on_close([raw = w.get()] { reset_without_gil(raw->window); });
             return w;
           }),
           py::arg("communicator"), py::arg("name"), py::arg("local"), py::arg("codec") = "none")
      .def(
          "put",
          [](const PyWindow& w, int peer, const py::object& src, std::size_t offset) {
            return window_op(w, src, "Window.put: src", false, [&](collective::Window& win, const Array& a) {
              return win.put(peer, a.const_view(), offset);
            });
          },
          py::arg("peer"), py::arg("src"), py::arg("offset") = 0, "peer's array[offset:offset+len(src)] = src.")
      .def(
          "get",
          [](const PyWindow& w, int peer, const py::object& out, std::size_t offset) {
            return window_op(w, out, "Window.get: out", true, [&](collective::Window& win, const Array& a) {
              return win.get(peer, a.mutable_view(), offset);
            });
          },
          py::arg("peer"), py::arg("out"), py::arg("offset") = 0, "out = peer's array[offset:offset+len(out)].")
      .def(
          "accumulate",
          [](const PyWindow& w, int peer, const py::object& src, std::size_t offset) {
            return window_op(w, src, "Window.accumulate: src", false, [&](collective::Window& win, const Array& a) {
              return win.accumulate(peer, a.const_view(), offset);
            });
          },
          py::arg("peer"), py::arg("src"), py::arg("offset") = 0, "peer's array[offset:...] += src (float32/64).")
      .def("close", [](PyWindow& w) {
        if (w.window == nullptr) return;
        collective::Window& window = w.get();
        interruptible([&] { window.close(); });
        w.window.reset();
      });
}

}  // namespace

PyWork::PyWork(core::Work w, std::vector<py::object> k, ContextRef c)
    : keep(std::move(k)),
      slot(std::make_shared<std::unique_ptr<core::Work>>(std::make_unique<core::Work>(std::move(w)))),
      ctx(std::move(c)) {
  closer = ctx->on_close([slot = slot] { reset_without_gil(*slot); });
}

PyWork::~PyWork() {
  if (!slot) return;  // moved from
  ctx->forget(closer);
  // Dropping an operation may wait for a transfer under way (Context contract): without the GIL, so
  // the worker thread that completes it can run Python meanwhile; the arrays go after it.
  reset_without_gil(*slot);
}

core::Work& PyWork::get() const {
  FAST_ENFORCE_AS(core::InvalidUsage, slot && *slot,
                  "fast.Work: its world has ended (the operation was dropped with it); a Work is used within the "
                  "world that made it");
  return **slot;
}

void bind_mover(py::module_& m) {
  bind_work(m);  // before the Context, whose send and recv return a Work
  bind_context(m);
  bind_communicator(m);
  bind_window(m);
}

}  // namespace fast::python
