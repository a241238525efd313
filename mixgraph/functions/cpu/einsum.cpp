// Einsum on the CPU, as NNabla's in outline: the inputs are contracted
// pairwise from the left, each step a batched matrix product (labels kept
// by both sides, summed ones, labels of one side); labels no later step or
// the output needs are summed out first. Each operand is read through its
// strides per index (a repeated label reads its diagonal, a broadcast axis
// does not move), gathered in double into a contiguous block, and the
// products accumulate in fp32. dx_k is the same contraction of dy and the
// other inputs into x_k's labels, scattered to its diagonal.
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/einsum.hpp>
#include <mixgraph/functions/registry.hpp>

#include <algorithm>

namespace mg::cpu {

namespace {

using Ids = std::vector<int>;

// An operand: data read at sum over indices of index * strides[index].
struct View {
  const float* data;
  std::vector<int64_t> strides;  // one per index; 0 where it does not vary
};

// Calls f(offsets) for every index tuple over `ids` (the last fastest),
// with one offset per stride table (tables[t][j] for ids[j]).
template <class Fn>
void walk(const std::vector<int64_t>& sizes, const Ids& ids,
          const std::vector<std::vector<int64_t>>& tables, Fn&& f) {
  const int nl = static_cast<int>(ids.size());
  const size_t nt = tables.size();
  for (int id : ids) {
    if (sizes[id] == 0) return;
  }
  std::vector<int64_t> pos(nl, 0), off(nt, 0);
  while (true) {
    f(off.data());
    int l = nl - 1;
    for (; l >= 0; --l) {
      const int64_t size = sizes[ids[l]];
      for (size_t t = 0; t < nt; ++t) off[t] += tables[t][l];
      if (++pos[l] < size) break;
      for (size_t t = 0; t < nt; ++t) off[t] -= tables[t][l] * pos[l];
      pos[l] = 0;
    }
    if (l < 0) return;
  }
}

int64_t count(const std::vector<int64_t>& sizes, const Ids& ids) {
  int64_t n = 1;
  for (int id : ids) n *= sizes[id];
  return n;
}

// v's values laid out contiguously over `keep` (row-major), summed in
// double over `sum`.
std::vector<float> gather(const View& v, const std::vector<int64_t>& sizes,
                          const Ids& keep, const Ids& sum) {
  Ids ids = keep;
  ids.insert(ids.end(), sum.begin(), sum.end());
  std::vector<std::vector<int64_t>> tables(2);
  for (int id : ids) tables[0].push_back(v.strides[id]);
  int64_t stride = 1;
  tables[1].assign(ids.size(), 0);
  for (size_t j = keep.size(); j-- > 0;) {
    tables[1][j] = stride;
    stride *= sizes[keep[j]];
  }
  std::vector<double> acc(static_cast<size_t>(count(sizes, keep)), 0.0);
  walk(sizes, ids, tables,
       [&](const int64_t* off) { acc[off[1]] += v.data[off[0]]; });
  return std::vector<float>(acc.begin(), acc.end());
}

// The indices v varies along.
Ids labels(const View& v, const std::vector<int64_t>& sizes) {
  Ids ids;
  for (size_t id = 0; id < sizes.size(); ++id) {
    if (v.strides[id] != 0 && sizes[id] > 1)
      ids.push_back(static_cast<int>(id));
  }
  return ids;
}

bool has(const Ids& ids, int id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// A contiguous block over `ids` and the view of it.
struct Block {
  std::vector<float> data;
  Ids ids;
  View view(size_t num_ids, const std::vector<int64_t>& sizes) const {
    View v{data.data(), std::vector<int64_t>(num_ids, 0)};
    int64_t stride = 1;
    for (size_t j = ids.size(); j-- > 0;) {
      v.strides[ids[j]] = stride;
      stride *= sizes[ids[j]];
    }
    return v;
  }
};

// The contraction of the operands into a contiguous block over `target`
// (an index no operand varies along is broadcast).
std::vector<float> contract(const std::vector<View>& ops,
                            const std::vector<int64_t>& sizes,
                            const Ids& target) {
  const size_t nid = sizes.size();
  if (std::find(sizes.begin(), sizes.end(), 0) != sizes.end()) {
    // An empty axis: every sum is empty (and the operands may hold nothing).
    return std::vector<float>(static_cast<size_t>(count(sizes, target)), 0.0f);
  }
  // needed[k]: the indices the output or an operand after k reads.
  std::vector<Ids> needed(ops.size());
  Ids need = target;
  for (size_t k = ops.size(); k-- > 0;) {
    needed[k] = need;
    for (int id : labels(ops[k], sizes)) {
      if (!has(need, id)) need.push_back(id);
    }
  }
  Block cur;
  {
    Ids keep, sum;
    for (int id : labels(ops[0], sizes)) {
      (has(needed[0], id) ? keep : sum).push_back(id);
    }
    cur.data = gather(ops[0], sizes, keep, sum);
    cur.ids = keep;
  }
  for (size_t k = 1; k < ops.size(); ++k) {
    const Ids la = cur.ids, lb = labels(ops[k], sizes);
    Ids batch, m, n, kk, sum_a, sum_b;
    for (int id : la) {
      const bool need_it = has(needed[k], id);
      if (has(lb, id)) {
        (need_it ? batch : kk).push_back(id);
      } else {
        (need_it ? m : sum_a).push_back(id);
      }
    }
    for (int id : lb) {
      if (!has(la, id)) (has(needed[k], id) ? n : sum_b).push_back(id);
    }
    Ids a_keep = batch, b_keep = batch;
    a_keep.insert(a_keep.end(), m.begin(), m.end());
    a_keep.insert(a_keep.end(), kk.begin(), kk.end());
    b_keep.insert(b_keep.end(), kk.begin(), kk.end());
    b_keep.insert(b_keep.end(), n.begin(), n.end());
    const std::vector<float> a =
        gather(cur.view(nid, sizes), sizes, a_keep, sum_a);
    const std::vector<float> b = gather(ops[k], sizes, b_keep, sum_b);
    const int64_t nb = count(sizes, batch), nm = count(sizes, m),
                  nk = count(sizes, kk), nn = count(sizes, n);
    Block next;
    next.ids = batch;
    next.ids.insert(next.ids.end(), m.begin(), m.end());
    next.ids.insert(next.ids.end(), n.begin(), n.end());
    next.data.assign(static_cast<size_t>(nb * nm * nn), 0.0f);
    float* c = next.data.data();
    // c[b, i, :] += a[b, i, p] b[b, p, :]: the inner loop runs along
    // contiguous rows, summing in fp32.
#pragma omp parallel for schedule(static) if (nb * nm * nk * nn >= (1 << 16))
    for (int64_t r = 0; r < nb * nm; ++r) {
      const int64_t bi = r / std::max<int64_t>(nm, 1);
      float* crow = c + r * nn;
      const float* arow = a.data() + r * nk;
      for (int64_t p = 0; p < nk; ++p) {
        const float av = arow[p];
        const float* brow = b.data() + (bi * nk + p) * nn;
        for (int64_t j = 0; j < nn; ++j) crow[j] += av * brow[j];
      }
    }
    cur = std::move(next);
  }
  Ids sum;
  for (int id : cur.ids) {
    if (!has(target, id)) sum.push_back(id);
  }
  return gather(cur.view(nid, sizes), sizes, target, sum);
}

template <class T>
class EinsumCpu : public Einsum {
 public:
  using Einsum::Einsum;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    std::vector<std::vector<float>> xs;
    for (Variable* v : in) xs.push_back(floats_of<T>(v));
    std::vector<View> ops;
    for (size_t k = 0; k < in.size(); ++k) {
      ops.push_back({xs[k].data(), strides_[k]});
    }
    Ids target(static_cast<size_t>(out_labels_));
    for (int64_t l = 0; l < out_labels_; ++l) target[l] = static_cast<int>(l);
    const std::vector<float> y = contract(ops, sizes_, target);
    store(y.data(), output<T>(out[0]), out[0]->size());
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    const size_t n = in.size();
    std::vector<std::vector<float>> xs;
    for (Variable* v : in) xs.push_back(floats_of<T>(v));
    const std::vector<float> dy = grad_floats_of<T>(out[0]);
    const bool empty =
        std::find(sizes_.begin(), sizes_.end(), 0) != sizes_.end();
    for (size_t k = 0; k < n; ++k) {
      if (!propagate_down[k]) continue;
      // dy and the other inputs contracted into x_k's labels ...
      std::vector<View> ops{{dy.data(), strides_[n]}};
      for (size_t j = 0; j < n; ++j) {
        if (j != k) ops.push_back({xs[j].data(), strides_[j]});
      }
      const Ids target = labels({xs[k].data(), strides_[k]}, sizes_);
      const std::vector<float> g = contract(ops, sizes_, target);
      // ... then laid on x_k (its diagonal for a repeated label).
      std::vector<float> dx(static_cast<size_t>(in[k]->size()), 0.0f);
      if (empty) {  // an empty axis: every grad is an empty sum
        store_grad<T>(dx.data(), in[k], accum[k]);
        continue;
      }
      std::vector<std::vector<int64_t>> tables(2);
      int64_t stride = 1;
      tables[1].assign(target.size(), 0);
      for (size_t j = target.size(); j-- > 0;) {
        tables[1][j] = stride;
        stride *= sizes_[target[j]];
      }
      for (int id : target) tables[0].push_back(strides_[k][id]);
      walk(sizes_, target, tables,
           [&](const int64_t* off) { dx[off[0]] = g[off[1]]; });
      store_grad<T>(dx.data(), in[k], accum[k]);
    }
  }
};

}  // namespace

void register_einsum(FunctionRegistry& r) {
  register_float_types<EinsumCpu>(r, decl::Einsum, "cpu");
}

}  // namespace mg::cpu
