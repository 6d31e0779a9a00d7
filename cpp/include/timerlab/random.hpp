// random.hpp — deterministic random streams and the distributions workloads
// draw from.
//
// Theory of operation
// -------------------
// Every source of randomness (each task, each timeout stream, ...) owns its
// own stream, seeded from (run seed, stream id) by splitmix64. So a run is
// fixed by its seed, bit for bit, on every platform (no std:: distributions,
// whose algorithms differ between standard libraries), and two runs that
// differ only in a kernel policy (push vs pull) see the very same workload
// draws — the paired comparison a what-if question wants.
//
// Floating point: only +, -, *, / and sqrt (exactly rounded by IEEE 754) are
// used, with contraction into fused multiply-adds disabled for the core, so
// the logarithm and exponential below are computed identically everywhere
// (a platform's libm may differ in the last bit, and one bit changes a run).
//
// Distributions are in ns (or dimensionless for probabilities):
//   const x | uniform [a, b) | exponential with mean m | lognormal with median
//   m and shape s (sigma of the log) — all truncated at 0 and at 2^62.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace timerlab {

inline std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// xoshiro256** seeded by splitmix64: fast, small, identical everywhere.
class Rng {
 public:
  Rng(std::uint64_t seed, std::uint64_t stream) {
    std::uint64_t sm = seed ^ (stream * 0xD1B54A32D192ED03ull);
    for (auto& w : s_) w = splitmix64(sm);
  }
  std::uint64_t next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  bool bernoulli(double p) { return uniform() < p; }
  // Uniform integer in [0, n).
  std::uint64_t below(std::uint64_t n) { return n ? next() % n : 0; }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4];
};

// ln(x) for normal x > 0: x = m * 2^e with m in [sqrt(1/2), sqrt(2)], then
// ln(m) = 2 atanh(t), t = (m-1)/(m+1), |t| < 0.172, by its series evaluated
// in Horner form (12 terms reach full double precision).
inline double det_log(double x) {
  // Split the (normal, positive) double into its exponent and a mantissa in
  // [1, 2) by its bits; exact, and cheaper than a call to frexp.
  const auto bits = std::bit_cast<std::uint64_t>(x);
  int e = static_cast<int>((bits >> 52) & 0x7FF) - 1023;
  double m = std::bit_cast<double>((bits & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull);
  if (m > 1.4142135623730951) {
    m *= 0.5;
    ++e;
  }
  const double t = (m - 1) / (m + 1), z = t * t;
  // Estrin's scheme: the same sum as Horner's rule, in fixed order, but with
  // four dependent steps instead of eleven.
  static constexpr double c[12] = {1.0,       1.0 / 3,  1.0 / 5,  1.0 / 7,  1.0 / 9,  1.0 / 11,
                                   1.0 / 13, 1.0 / 15, 1.0 / 17, 1.0 / 19, 1.0 / 21, 1.0 / 23};
  const double z2 = z * z, z4 = z2 * z2, z8 = z4 * z4;
  const double r0 = (c[0] + c[1] * z) + (c[2] + c[3] * z) * z2;
  const double r1 = (c[4] + c[5] * z) + (c[6] + c[7] * z) * z2;
  const double r2 = (c[8] + c[9] * z) + (c[10] + c[11] * z) * z2;
  const double p = r0 + r1 * z4 + r2 * z8;
  return 2 * t * p + e * 0.6931471805599453;
}

// e^x: x = k ln2 + r with |r| <= ln2 / 2, e^r by its Taylor series to r^15
// (the next term is below 2^-70 of the sum), evaluated by Estrin's scheme.
inline double det_exp(double x) {
  if (x > 700) return HUGE_VAL;
  if (x < -700) return 0;
  const double k = std::floor(x / 0.6931471805599453 + 0.5);
  const double r = x - k * 0.6931471805599453;
  static constexpr double f[16] = {1.0,
                                   1.0,
                                   1.0 / 2,
                                   1.0 / 6,
                                   1.0 / 24,
                                   1.0 / 120,
                                   1.0 / 720,
                                   1.0 / 5040,
                                   1.0 / 40320,
                                   1.0 / 362880,
                                   1.0 / 3628800,
                                   1.0 / 39916800,
                                   1.0 / 479001600,
                                   1.0 / 6227020800.0,
                                   1.0 / 87178291200.0,
                                   1.0 / 1307674368000.0};
  const double r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
  const double a0 = (f[0] + f[1] * r) + (f[2] + f[3] * r) * r2;
  const double a1 = (f[4] + f[5] * r) + (f[6] + f[7] * r) * r2;
  const double a2 = (f[8] + f[9] * r) + (f[10] + f[11] * r) * r2;
  const double a3 = (f[12] + f[13] * r) + (f[14] + f[15] * r) * r2;
  const double sum = (a0 + a1 * r4) + (a2 + a3 * r4) * r8;
  return std::ldexp(sum, static_cast<int>(k));
}

struct Dist {
  enum class Kind : std::uint8_t { constant, uniform, exponential, lognormal };
  Kind kind = Kind::constant;
  double a = 0, b = 0;  // const: a; uniform: [a, b); exponential: mean a; lognormal: median a, sigma b

  static Dist constant(double x) { return {Kind::constant, x, 0}; }
  // Throws std::invalid_argument naming `what` if the parameters make no sense.
  void validate(const std::string& what) const;
  std::int64_t sample_ns(Rng& rng) const;
  double mean() const;
};

inline void Dist::validate(const std::string& what) const {
  // At most 2^62 ns (timerlab.dist.MAX_NS): sums with the clock stay in int64.
  const bool finite = std::isfinite(a) && std::isfinite(b);
  bool ok = finite && a >= 0 && a <= 0x1p62 && b <= 0x1p62;
  if (kind == Kind::uniform) ok = ok && b >= a;
  if (kind == Kind::lognormal) ok = ok && a > 0 && b >= 0 && b <= 10;
  if (!ok) {
    throw std::invalid_argument(what + ": distribution parameters must be finite, non-negative and at most 2^62 ns "
                                       "(a lognormal's sigma at most 10)");
  }
}

inline std::int64_t Dist::sample_ns(Rng& rng) const {
  double x = a;
  switch (kind) {
    case Kind::constant:
      break;
    case Kind::uniform:
      x = a + (b - a) * rng.uniform();
      break;
    case Kind::exponential:
      x = -a * det_log(1.0 - rng.uniform());
      break;
    case Kind::lognormal: {
      // A standard normal by Marsaglia's polar method (log and sqrt only).
      double u, v, s;
      do {
        u = 2 * rng.uniform() - 1;
        v = 2 * rng.uniform() - 1;
        s = u * u + v * v;
      } while (s >= 1 || s == 0);
      x = a * det_exp(b * u * std::sqrt(-2 * det_log(s) / s));
      break;
    }
  }
  if (!(x > 0)) return 0;
  return x > 0x1.0p62 ? (std::int64_t{1} << 62) : static_cast<std::int64_t>(x);
}

inline double Dist::mean() const {
  switch (kind) {
    case Kind::constant:
      return a;
    case Kind::uniform:
      return (a + b) / 2;
    case Kind::exponential:
      return a;
    case Kind::lognormal:
      return a * det_exp(b * b / 2);
  }
  return a;
}

}  // namespace timerlab
