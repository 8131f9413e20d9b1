//===- Exp2Polynomial.h - The kernels' 2^x as a polynomial ------*- C++ -*-===//
//
// Softmax weights are 2^x for x <= 0, computed in the kernels as
// 2^whole(x) times a polynomial of the fraction x - whole(x), with no libm
// call. The MLIR CPU kernel and the Halide algorithm evaluate the same
// polynomials, so both backends round a weight alike. Coefficients are
// minimax in relative error with the constant term 1, highest power first.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_SUPPORT_EXP2POLYNOMIAL_H
#define ATTNC_SUPPORT_EXP2POLYNOMIAL_H

namespace attnc {

/// 2^f for f = x - round(x) in [-1/2, 1/2]: relative error 9.1e-8
/// (1.7e-7 evaluated in f32).
inline constexpr double kExp2RoundedFraction[] = {
    1.3264727180202446e-3, 9.6715126408820630e-3, 5.5507337433094760e-2,
    2.4022242085348225e-1, 6.9314697759912390e-1, 1.0};

/// 2^f for f = x - floor(x) in [0, 1] (AVX-512's vreduceps): relative error
/// 8.2e-8 (1.4e-7 evaluated in f32); p(0) = 1 exactly.
inline constexpr double kExp2FlooredFraction[] = {
    1.8671316816442213e-3, 9.0170269116379710e-3, 5.5799915539523540e-2,
    2.4016444948861740e-1, 6.9315131185912570e-1, 1.0};

} // namespace attnc

#endif // ATTNC_SUPPORT_EXP2POLYNOMIAL_H
