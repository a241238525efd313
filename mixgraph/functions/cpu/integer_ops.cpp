// Mod2 and BitShift on the CPU: integer data in the type it is held in
// (exact), floating data in fp32; one broadcasting loop for both.
#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/integer_ops.hpp>
#include <mixgraph/functions/registry.hpp>

#include <cmath>
#include <type_traits>

namespace mg::cpu {

namespace {

// Calls f(j, i0, i1) for every output element j with the elements of x0
// and x1 it reads.
template <class Fn>
void for_each_broadcast(const BroadcastPlan& p, Fn&& f) {
  const int nd = static_cast<int>(p.out_shape.size());
  const int64_t n = shape_size(p.out_shape);
  std::vector<int64_t> pos(nd, 0);
  int64_t i0 = 0, i1 = 0;
  for (int64_t j = 0; j < n; ++j) {
    f(j, i0, i1);
    for (int a = nd - 1; a >= 0; --a) {
      i0 += p.stride0[a];
      i1 += p.stride1[a];
      if (++pos[a] < p.out_shape[a]) break;
      i0 -= p.stride0[a] * pos[a];
      i1 -= p.stride1[a] * pos[a];
      pos[a] = 0;
    }
  }
}

// v's values in fp32: integer data converted directly (exact to 2^24, not
// through T), floating data as floats_of<T>.
template <class T>
std::vector<float> values_as_floats(Variable* v) {
  if (!holds_integers(v)) return floats_of<T>(v);
  const float* p = v->data()->get<const float>();
  return std::vector<float>(p, p + v->size());
}

// The integer types x0 may hold: fn(TypeTag<U>) for its dtype.
template <class Fn>
void dispatch_integers(Variable* v, const std::string& tag, Fn&& fn) {
  const Dtype d = v->data()->array().dtype();
  dispatch_all_types(d, tag.c_str(), [&](auto t) {
    using U = typename decltype(t)::type;
    if constexpr (std::is_same_v<U, int32_t> || std::is_same_v<U, int64_t> ||
                  std::is_same_v<U, uint8_t>) {
      fn(t);
    } else {
      throw std::invalid_argument(msg(tag, "x holds ", dtype_name(d),
                                      " data; expected int, long or uint8"));
    }
  });
}

template <class T>
class Mod2Cpu : public Mod2 {
 public:
  using Mod2::Mod2;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    if (holds_integers(in[0])) {
      dispatch_integers(in[0], tag(), [&](auto t) {
        using U = typename decltype(t)::type;
        this->template integer_mod<U>(in, out);
      });
      return;
    }
    const std::vector<float> a = values_as_floats<T>(in[0]);
    const std::vector<float> b = values_as_floats<T>(in[1]);
    std::vector<float> y(static_cast<size_t>(out[0]->size()));
    for_each_broadcast(plan_, [&](int64_t j, int64_t i0, int64_t i1) {
      y[j] = std::fmod(a[i0], b[i1]);
    });
    store(y.data(), output<T>(out[0]), out[0]->size());
  }

  void backward_impl(const Variables& in, const Variables&,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    for (int i = 0; i < 2; ++i) {
      if (propagate_down[i]) zero_input_grad<T>(in[i], accum[i]);
    }
  }

 private:
  template <class U>
  void integer_mod(const Variables& in, const Variables& out) {
    const U* a = in[0]->data()->template get<const U>();
    const U* b = in[1]->data()->template get<const U>();
    U* y = output<U>(out[0]);
    const bool trunc = opts_.fmod;
    for_each_broadcast(plan_, [&](int64_t j, int64_t i0, int64_t i1) {
      const U d = b[i1];
      if (d == 0) {
        throw std::invalid_argument(
            msg(tag(), "x1 is 0 at element ", i1,
                ": an integer remainder by zero is undefined"));
      }
      if constexpr (std::is_signed_v<U>) {
        if (d == U(-1)) {  // x % -1 overflows at the type's minimum
          y[j] = 0;
          return;
        }
      }
      U r = static_cast<U>(a[i0] % d);
      if constexpr (std::is_signed_v<U>) {
        if (!trunc && r != 0 && ((r < 0) != (d < 0))) r = static_cast<U>(r + d);
      }
      y[j] = r;
    });
  }
};

template <class T>
class BitShiftCpu : public BitShift {
 public:
  using BitShift::BitShift;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    if (!holds_integers(in[0])) {
      // Whole numbers held as floating data (checked): shifted as int32.
      const int32_t* x = index_data(in[0], tag(), "x");
      const int32_t* s = index_data(in[1], tag(), "shift");
      shift<int32_t>(x, s, output<int32_t>(out[0]));
      return;
    }
    dispatch_integers(in[0], tag(), [&](auto t) {
      using U = typename decltype(t)::type;
      // shift is converted to x's type, as NNabla's; a floating shift must
      // be whole (a fraction is no shift count).
      const U* x = in[0]->data()->template get<const U>();
      const U* s = nullptr;
      std::vector<U> conv;
      if (holds_integers(in[1])) {
        s = in[1]->data()->template get<const U>();
      } else {
        const int32_t* si = index_data(in[1], tag(), "shift");
        conv.assign(si, si + in[1]->size());
        s = conv.data();
      }
      this->template shift<U>(x, s, output<U>(out[0]));
    });
  }

  void backward_impl(const Variables& in, const Variables&,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    for (int i = 0; i < 2; ++i) {
      if (propagate_down[i]) zero_input_grad<T>(in[i], accum[i]);
    }
  }

 private:
  // On U's bits as the unsigned type of its width.
  template <class U>
  void shift(const U* x, const U* s, U* y) {
    using B = std::make_unsigned_t<U>;
    constexpr int64_t bits = 8 * sizeof(U);
    for_each_broadcast(plan_, [&](int64_t j, int64_t i0, int64_t i1) {
      const int64_t k = static_cast<int64_t>(s[i1]);
      if (k < 0 || k >= bits) {
        y[j] = 0;
        return;
      }
      const B v = static_cast<B>(x[i0]);
      y[j] = static_cast<U>(left_ ? static_cast<B>(v << k)
                                  : static_cast<B>(v >> k));
    });
  }
};

}  // namespace

void register_integer_ops(FunctionRegistry& r) {
  register_float_types<Mod2Cpu>(r, decl::Mod2, "cpu");
  register_float_types<BitShiftCpu>(r, decl::BitShift, "cpu");
}

}  // namespace mg::cpu
