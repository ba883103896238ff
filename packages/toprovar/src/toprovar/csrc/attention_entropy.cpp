// Fused CPU attention with each query's softmax entropy (toprovar).
//
// Flash-style blocked attention: for each (batch, head, query block) the keys are visited in
// blocks; the block scores S = scale * Q K^T and the product P V go through the BLAS that
// libtorch_cpu exports (sgemm_/dgemm_: MKL or OpenBLAS), the online softmax keeps per query the
// running max m, the rescaled sum Z = sum_j e^{s_ij - m} and, for the entropy, the centred
// first moment A = sum_j e^{s_ij - m} (s_ij - m). When a block raises the max from m to m',
// alpha = e^{m - m'} rescales Z, A and the output accumulator, and A also shifts by
// (m - m') Z. At the end H = log Z - A / Z and lse = m + log Z. The moment costs one
// multiply-add per score inside the exp loop; no n_q x n_k matrix is kept.
// The layout of the loop (query blocks, key blocks of 512, gemms on column-major views) follows
// the structure of torch's own CPU flash attention (aten/src/ATen/native/cpu/
// FlashAttentionKernel.cpp); the code is ours.

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__)
#define CPU_CAPABILITY AVX512
#define CPU_CAPABILITY_AVX512
#elif defined(__AVX2__) && defined(__FMA__)
#define CPU_CAPABILITY AVX2
#define CPU_CAPABILITY_AVX2
#else
#define CPU_CAPABILITY DEFAULT
#endif

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/cpu/vec/functional.h>
#include <ATen/cpu/vec/vec.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

// Fortran BLAS exported by libtorch_cpu (MKL or OpenBLAS, LP64), column-major.
extern "C" {
void sgemm_(const char* ta, const char* tb, const int* m, const int* n, const int* k,
            const float* alpha, const float* a, const int* lda, const float* b, const int* ldb,
            const float* beta, float* c, const int* ldc);
void dgemm_(const char* ta, const char* tb, const int* m, const int* n, const int* k,
            const double* alpha, const double* a, const int* lda, const double* b,
            const int* ldb, const double* beta, double* c, const int* ldc);
}

namespace {

using at::vec::Vectorized;

// column-major C (m x n) = alpha op(A) op(B) + beta C
inline void gemm(char ta, char tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  const int m_ = m, n_ = n, k_ = k, lda_ = lda, ldb_ = ldb, ldc_ = ldc;
  sgemm_(&ta, &tb, &m_, &n_, &k_, &alpha, a, &lda_, b, &ldb_, &beta, c, &ldc_);
}
inline void gemm(char ta, char tb, int64_t m, int64_t n, int64_t k, double alpha,
                 const double* a, int64_t lda, const double* b, int64_t ldb, double beta,
                 double* c, int64_t ldc) {
  const int m_ = m, n_ = n, k_ = k, lda_ = lda, ldb_ = ldb, ldc_ = ldc;
  dgemm_(&ta, &tb, &m_, &n_, &k_, &alpha, a, &lda_, b, &ldb_, &beta, c, &ldc_);
}

template <typename T>
inline Vectorized<T> vexp(const Vectorized<T>& x) {
  return x.exp_u20();
}

// max over row[0..n)
template <typename T>
inline T row_max(const T* row, int64_t n) {
  using V = Vectorized<T>;
  constexpr int64_t L = V::size();
  T m = -std::numeric_limits<T>::infinity();
  int64_t j = 0;
  if (n >= L) {
    V vm = V::loadu(row);
    for (j = L; j + L <= n; j += L) vm = at::vec::maximum(vm, V::loadu(row + j));
    m = at::vec::vec_reduce_all<T>([](V& a, V& b) { return at::vec::maximum(a, b); }, vm);
  }
  for (; j < n; ++j) m = std::max(m, row[j]);
  return m;
}

// row[j] <- e^{row[j] - m}; returns (sum_j e^{.}, sum_j e^{.} (row[j] - m))
template <typename T>
inline void exp_sum_moment(T* row, int64_t n, T m, T& sum, T& moment) {
  using V = Vectorized<T>;
  constexpr int64_t L = V::size();
  V vm(m), vs(T(0)), va(T(0));
  int64_t j = 0;
  for (; j + L <= n; j += L) {
    V c = V::loadu(row + j) - vm;
    V p = vexp(c);
    p.store(row + j);
    vs = vs + p;
    va = at::vec::fmadd(p, c, va);
  }
  T s = at::vec::vec_reduce_all<T>([](V& a, V& b) { return a + b; }, vs);
  T a = at::vec::vec_reduce_all<T>([](V& a, V& b) { return a + b; }, va);
  for (; j < n; ++j) {
    T c = row[j] - m;
    T p = std::exp(c);
    row[j] = p;
    s += p;
    a += p * c;
  }
  sum = s;
  moment = a;
}

// One (batch, head) pair's keys and values: pointers with a row stride, either into the inputs
// or, under a key mask, into a per-thread buffer holding the row's allowed keys only.
template <typename T>
struct KeyView {
  const T* k;
  const T* v;
  int64_t ldk, ldv, n;
};

// Strides in elements of a (B, H, N, D) tensor whose last dimension is contiguous.
struct Strides {
  int64_t b, h, n;
};

inline Strides strides_of(const at::Tensor& t) { return {t.stride(0), t.stride(1), t.stride(2)}; }

// q_len (B) or null: queries i >= q_len[b] of row b are padding (output, entropy and lse 0);
// key_mask (B, NK) or null: the keys row b's queries may attend (every head, every query).
template <typename T>
void kernel(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale_d,
            const int64_t* q_len, const bool* key_mask, at::Tensor& out, at::Tensor& ent,
            at::Tensor& lse) {
  const int64_t B = q.size(0), H = q.size(1), NQ = q.size(2), D = q.size(3);
  const int64_t NK = k.size(2), DV = v.size(3);
  const T scale = static_cast<T>(scale_d);
  const int64_t qSplit = NQ >= 768 ? 256 : (NQ >= 192 ? 64 : 32);
  const int64_t kvSplit = 512;
  const Strides qs = strides_of(q), ks = strides_of(k), vs = strides_of(v);
  const T* qp = q.const_data_ptr<T>();
  const T* kp = k.const_data_ptr<T>();
  const T* vp = v.const_data_ptr<T>();
  T* op = out.data_ptr<T>();  // (B, NQ, H, DV) contiguous
  T* ep = ent.data_ptr<T>();  // (B, H, NQ)
  T* lp = lse.data_ptr<T>();
  const T ninf = -std::numeric_limits<T>::infinity();

  at::parallel_for(0, B * H, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> qk(qSplit * std::min(kvSplit, NK)), mx(qSplit), z(qSplit), a(qSplit),
        acc(qSplit * DV), kbuf, vbuf;
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / H, h = bh % H;
      const int64_t nq = q_len ? std::min<int64_t>(q_len[b], NQ) : NQ;
      KeyView<T> kv{kp + b * ks.b + h * ks.h, vp + b * vs.b + h * vs.h, ks.n, vs.n, NK};
      if (key_mask && nq > 0) {  // gather the row's allowed keys: masked keys cost nothing
        const bool* mrow = key_mask + b * NK;
        kbuf.resize(NK * D);
        vbuf.resize(NK * DV);
        int64_t n = 0;
        for (int64_t j = 0; j < NK; ++j) {
          if (!mrow[j]) continue;
          std::copy_n(kv.k + j * kv.ldk, D, kbuf.data() + n * D);
          std::copy_n(kv.v + j * kv.ldv, DV, vbuf.data() + n * DV);
          ++n;
        }
        kv = KeyView<T>{kbuf.data(), vbuf.data(), D, DV, n};
      }
      T* obase = op + b * NQ * H * DV + h * DV;  // query i at obase + i * H * DV
      for (int64_t i = nq; i < NQ; ++i) {  // padding queries
        std::fill_n(obase + i * H * DV, DV, T(0));
        ep[bh * NQ + i] = T(0);
        lp[bh * NQ + i] = T(0);
      }
      for (int64_t i0 = 0; i0 < nq; i0 += qSplit) {
        const int64_t qn = std::min(qSplit, nq - i0);
        const T* qrow = qp + b * qs.b + h * qs.h + i0 * qs.n;
        std::fill(mx.begin(), mx.begin() + qn, ninf);
        std::fill(z.begin(), z.begin() + qn, T(0));
        std::fill(a.begin(), a.begin() + qn, T(0));
        for (int64_t j0 = 0; j0 < kv.n; j0 += kvSplit) {
          const int64_t kn = std::min(kvSplit, kv.n - j0);
          // column-major: C (kn x qn) = scale * K_blk (kn x D) @ Q_blk^T; row-major: S (qn x kn)
          gemm('T', 'N', kn, qn, D, scale, kv.k + j0 * kv.ldk, kv.ldk, qrow, qs.n, T(0),
               qk.data(), kn);
          for (int64_t r = 0; r < qn; ++r) {
            T* row = qk.data() + r * kn;
            const T m_old = mx[r];
            const T m_new = std::max(m_old, row_max(row, kn));
            T s, mom;
            exp_sum_moment(row, kn, m_new, s, mom);
            if (j0 == 0) {
              z[r] = s;
              a[r] = mom;
            } else {
              const T alpha = std::exp(m_old - m_new);
              a[r] = alpha * (a[r] + (m_old - m_new) * z[r]) + mom;
              z[r] = alpha * z[r] + s;
              if (alpha != T(1)) {
                at::vec::map([alpha](Vectorized<T> x) { return x * Vectorized<T>(alpha); },
                             acc.data() + r * DV, acc.data() + r * DV, DV);
              }
            }
            mx[r] = m_new;
          }
          // column-major: Acc (DV x qn) (+)= V_blk^T-view (DV x kn) @ P (kn x qn)
          gemm('N', 'N', DV, qn, kn, T(1), kv.v + j0 * kv.ldv, kv.ldv, qk.data(), kn,
               j0 == 0 ? T(0) : T(1), acc.data(), DV);
        }
        for (int64_t r = 0; r < qn; ++r) {
          const T inv = T(1) / z[r];
          at::vec::map([inv](Vectorized<T> x) { return x * Vectorized<T>(inv); },
                       obase + (i0 + r) * H * DV, acc.data() + r * DV, DV);
          const T logz = std::log(z[r]);
          ep[bh * NQ + i0 + r] = logz - a[r] * inv;
          lp[bh * NQ + i0 + r] = mx[r] + logz;
        }
      }
    }
  });
}

// Inputs may be strided views (e.g. heads split off a packed qkv projection) as long as the
// last dimension is contiguous; the output is allocated as (B, NQ, H, DV) and returned as its
// (B, H, NQ, DV) view, so merging the heads back is free.
std::tuple<at::Tensor, at::Tensor, at::Tensor> run(const at::Tensor& q, const at::Tensor& k,
                                                   const at::Tensor& v, double scale,
                                                   const c10::optional<at::Tensor>& q_len,
                                                   const c10::optional<at::Tensor>& key_mask) {
  TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, "q, k, v: expected 4-D tensors");
  TORCH_CHECK(q.device().is_cpu() && k.device().is_cpu() && v.device().is_cpu(),
              "q, k, v: expected CPU tensors");
  TORCH_CHECK(q.scalar_type() == k.scalar_type() && q.scalar_type() == v.scalar_type(),
              "q, k, v: expected one dtype");
  TORCH_CHECK(q.size(0) == k.size(0) && q.size(1) == k.size(1) && q.size(3) == k.size(3) &&
                  k.size(0) == v.size(0) && k.size(1) == v.size(1) && k.size(2) == v.size(2),
              "q, k, v: shapes do not match");
  TORCH_CHECK(q.numel() > 0 && k.numel() > 0 && v.numel() > 0, "q, k, v: expected non-empty");
  const int64_t B = q.size(0), NK = k.size(2);
  auto last_contiguous = [](const at::Tensor& t) { return t.stride(3) == 1 ? t : t.contiguous(); };
  auto qc = last_contiguous(q), kc = last_contiguous(k), vc = last_contiguous(v);
  at::Tensor lens, mask;
  if (q_len.has_value()) {
    lens = q_len->to(at::kLong).contiguous();
    TORCH_CHECK(lens.dim() == 1 && lens.size(0) == B, "q_len: expected shape (batch,)");
  }
  if (key_mask.has_value()) {
    mask = key_mask->to(at::kBool).contiguous();
    TORCH_CHECK(mask.dim() == 2 && mask.size(0) == B && mask.size(1) == NK,
                "key_mask: expected shape (batch, n_k)");
    auto allowed = mask.sum(1);
    auto wanted = lens.defined() ? lens > 0 : at::ones({B}, mask.options());
    TORCH_CHECK(!(wanted & (allowed == 0)).any().item<bool>(),
                "key_mask: every row with queries needs at least one allowed key");
  }
  auto out = at::empty({q.size(0), q.size(2), q.size(1), v.size(3)}, q.options());
  auto ent = at::empty({q.size(0), q.size(1), q.size(2)}, q.options());
  auto lse = at::empty({q.size(0), q.size(1), q.size(2)}, q.options());
  const int64_t* lp = lens.defined() ? lens.const_data_ptr<int64_t>() : nullptr;
  const bool* mp = mask.defined() ? mask.const_data_ptr<bool>() : nullptr;
  if (q.scalar_type() == at::kFloat) {
    kernel<float>(qc, kc, vc, scale, lp, mp, out, ent, lse);
  } else if (q.scalar_type() == at::kDouble) {
    kernel<double>(qc, kc, vc, scale, lp, mp, out, ent, lse);
  } else {
    TORCH_CHECK(false, "q: expected float32 or float64, got ", q.scalar_type());
  }
  return {out.transpose(1, 2), ent, lse};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> attention_entropy(const at::Tensor& q,
                                                                 const at::Tensor& k,
                                                                 const at::Tensor& v,
                                                                 double scale) {
  return run(q, k, v, scale, c10::nullopt, c10::nullopt);
}

// The pruned layers' variant: per-row query counts (padding after them) and a per-row key mask.
std::tuple<at::Tensor, at::Tensor, at::Tensor> attention_entropy_masked(
    const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale,
    const c10::optional<at::Tensor>& q_len, const c10::optional<at::Tensor>& key_mask) {
  return run(q, k, v, scale, q_len, key_mask);
}

}  // namespace

TORCH_LIBRARY(toprovar_fused, m) {
  m.def("attention_entropy(Tensor q, Tensor k, Tensor v, float scale) -> (Tensor, Tensor, Tensor)");
  m.def(
      "attention_entropy_masked(Tensor q, Tensor k, Tensor v, float scale, Tensor? q_len, "
      "Tensor? key_mask) -> (Tensor, Tensor, Tensor)");
}

TORCH_LIBRARY_IMPL(toprovar_fused, CPU, m) {
  m.impl("attention_entropy", &attention_entropy);
  m.impl("attention_entropy_masked", &attention_entropy_masked);
}
