"""Constants of the inline math library: polynomial coefficients and split constants.

The polynomials are near-minimax fits (Lawson's iteratively reweighted least squares over
Chebyshev nodes, in mpmath at 40 digits) of the *tail* of each function after its exactly
representable leading terms, weighted so that the error is relative to the final result.
Coefficients were rounded to the working precision one at a time, refitting the remaining
ones after each rounding. The comment on each table gives the variable, the interval and the
weighted error of the rounded polynomial; tests/test_vmath.py checks the end-to-end error.

``split`` cuts a constant such as ln 2 into a head with few significant bits, so that its
product with a small integer is exact (Cody-Waite range reduction), and a rounded tail.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

# Decimal expansions, 50 digits (enough for every split below).
LN2 = "0.69314718055994530941723212145817656807550013436026"
PI = "3.1415926535897932384626433832795028841971693993751"
LOG10_2 = "0.30102999566398119521373889472449302676818988146211"
LOG2_E = "1.4426950408889634073599246810018921374266459541530"
LOG10_E = "0.43429448190325182765112891891660508548262467350563"
TWO_THIRDS = "0.66666666666666666666666666666666666666666666666667"


def _round_bits(q: Fraction, bits: int) -> Fraction:
    """``q`` rounded to ``bits`` significant bits (any rounding would do: only the sum of
    the pieces matters, and the next piece absorbs the difference)."""
    if q == 0:
        return q
    magnitude = abs(q)
    exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    if Fraction(2) ** exponent > magnitude:
        exponent -= 1
    scale = Fraction(2) ** (bits - 1 - exponent)
    return Fraction(round(q * scale)) / scale


def split(value: str | Fraction, head_bits: tuple[int, ...], dtype: str) -> tuple[float, ...]:
    """Pieces of a constant: one per entry of ``head_bits`` with that many significant bits,
    then a last piece rounded to ``dtype``. Their sum carries far more precision than one
    float of ``dtype``."""
    rest = Fraction(value)
    pieces = []
    for bits in head_bits:
        head = _round_bits(rest, bits)
        pieces.append(float(head))
        rest -= head
    pieces.append(float(np.dtype(dtype).type(float(rest))))
    return tuple(pieces)


def rounded(value: str | Fraction, dtype: str) -> float:
    """A constant rounded to ``dtype`` (as a Python float)."""
    return float(np.dtype(dtype).type(float(Fraction(value))))


def _pi_times_power_of_two(bits: int) -> int:
    """pi * 2**bits, truncated, within a few units (Machin: pi = 16 atan(1/5) - 4 atan(1/239),
    each arctangent series summed in integers)."""

    def arctan_of_inverse(k: int) -> int:
        power = total = (1 << bits) // k
        n = 1
        while power:
            power //= k * k
            total += (-1) ** n * (power // (2 * n + 1))
            n += 1
        return total

    return 16 * arctan_of_inverse(5) - 4 * arctan_of_inverse(239)


def two_over_pi_words(count: int) -> tuple[int, ...]:
    """The binary expansion of 2/pi in 64-bit words, most significant first, after one zero
    word: word i >= 1 holds the bits of weight 2**-(64i - 63) ... 2**-(64i). (The zero word
    lets a 64-bit window start up to 63 bits before the binary point.)"""
    bits = 64 * (count - 1)
    guard = 64  # the truncation errors of the series stay far below the last bit kept
    scaled = (1 << (2 * (bits + guard) + 1)) // _pi_times_power_of_two(bits + guard)
    scaled >>= guard
    return (0, *((scaled >> (64 * (count - 2 - i))) & (2**64 - 1) for i in range(count - 1)))


# expm1(r) = r + r^2/2 + r^3 * P(r), r in [-ln2/2, ln2/2]; relative error of expm1.
EXPM1 = {
    "float32": (  # 2^-26.1
        0.1666654795408249, 0.04166683554649353, 0.008366109803318977, 0.001389994751662016,
    ),
    "float64": (  # 2^-61.6
        0.16666666666666677, 0.04166666666666669, 0.008333333333321825, 0.001388888888888992,
        0.00019841269885224593, 2.4801587286180138e-05, 2.755724530139658e-06,
        2.7557323723259087e-07, 2.5108626659271855e-08, 2.0895602581691105e-09,
    ),
}

# log(1+f) = 2s + s*R with s = f/(2+f), z = s^2 in [0, 0.0295], R = z * P(z);
# error of z*P(z)/2 relative to log(1+f).
LOG = {
    "float32": (0.6666677594184875, 0.39977553486824036, 0.2987213730812073),  # 2^-30.2
    "float64": (  # 2^-59.5
        0.6666666666666735, 0.39999999999408653, 0.28571428743949384, 0.2222219839339127,
        0.18183574579111667, 0.15313766885837543, 0.14798987183077209,
    ),
}

# Double-word logarithm for pow: log(1+f) = 2s + 2s^3/3 + s^5 * P(w), w = s^2 in
# [0, 0.0295]; error of w^2 P(w)/2 relative to log(1+f).
LOG_TAIL = {
    "float32": (  # 2^-43.7
        0.3999999761581421, 0.28571972250938416, 0.22179701924324036, 0.1955765336751938,
    ),
    "float64": (  # 2^-66.3
        0.4000000000000229, 0.28571428570082774, 0.22222222523063748, 0.18181784080907928,
        0.1538677099925071, 0.13256489042769162, 0.1319946964311594,
    ),
}

# sin(r) = r + r^3 * P(z), z = r^2 in [0, (pi/4 + 1e-3)^2]; relative error of sin.
SIN = {
    "float32": (-0.16666655242443085, 0.008332190103828907, -0.00019518393673934042),  # 2^-28
    "float64": (  # 2^-63.2
        -0.16666666666666666, 0.008333333333333038, -0.00019841269840956114,
        2.7557319069881474e-06, -2.505206971609757e-08, 1.605414603322451e-10,
        -7.380867035185341e-13,
    ),
}

# cos(r) = 1 - z/2 + z^2 * P(z), z = r^2 in [0, (pi/4 + 1e-3)^2]; relative error of cos.
COS = {
    "float32": (0.04166664555668831, -0.0013887309469282627, 2.4432330974377692e-05),  # 2^-33
    "float64": (  # 2^-63.9
        0.041666666666666595, -0.0013888888888873299, 2.480158728895593e-05,
        -2.7557314199529853e-07, 2.08757025623554e-09, -1.1358583016008584e-11,
    ),
}

# atan(t) = t + t^3 * P(z), z = t^2 in [0, tan(pi/8)^2]; relative error of atan.
ATAN = {
    "float32": (  # 2^-30.5
        -0.33333316445350647, 0.1999853253364563, -0.14244510233402252, 0.10600164532661438,
        -0.06092701852321625,
    ),
    "float64": (  # 2^-59.5
        -0.333333333333332, 0.19999999999953877, -0.1428571428023009, 0.11111110785286035,
        -0.09090897813277458, 0.07692061241452805, -0.06663116022930585, 0.0584797792616619,
        -0.05039708411213223, 0.03807488713097522, -0.017918560742461863,
    ),
}

# erf(x) = x + x * P(z), z = x^2 in [0, 1]; relative error of erf.
ERF_SMALL = {
    "float32": (  # 2^-29.4
        0.12837916612625122, -0.3761262595653534, 0.11283578723669052, -0.026853347197175026,
        0.005187162663787603, -0.0007997864740900695, 7.806974463164806e-05,
    ),
    "float64": (  # 2^-56.4
        0.1283791670955126, -0.3761263890318409, 0.11283791670970851, -0.02686617064799537,
        0.005223977652466707, -0.0008548328530097985, 0.00012055386249653724,
        -1.4926889021155655e-05, 1.6481276493848619e-06, -1.6560421431426467e-07,
        1.6041732774749597e-08, -1.6598503173968328e-09, 1.460802585323971e-10,
    ),
}

# erfc(x) * exp(x^2) = P(1/x - center) on pieces of [1, saturation): (start, center, P);
# relative error.
ERFC_SCALED = {
    "float32": (
        (1.0, 0.625, (  # [1, 4]: 2^-26.3
            0.3059529960155487, 0.3822837471961975, -0.17239604890346527, 0.04376920312643051,
            0.023402318358421326, -0.04699936509132385, 0.04181022569537163,
            -0.026402147486805916, 0.015961138531565666, 0.02442486211657524,
            -0.06526852399110794,
        )),
    ),
    "float64": (
        (1.0, 0.7222222222222222, (  # [1, 2.25]: 2^-55.4
            0.341531898123901, 0.3500705471502582, -0.15868442711717679, 0.04911422968401442,
            0.005819715047181193, -0.0265135271238328, 0.02773568318167236,
            -0.01969190105049879, 0.00898787888511573, 0.0005178915737906489,
            -0.006976608187050503, 0.009920732024788884, -0.009722428544649407,
            0.007297267393540222, -0.004107630057657148, 0.00041818203314406704,
            0.005825389596759983, -0.00826214113210437,
        )),
        (2.25, 0.3055555555555556, (  # [2.25, 6]: 2^-54.1
            0.1652692771277047, 0.49929873686945647, -0.1764617611436532, -0.0691219467413996,
            0.17999910366331237, -0.13078398305030084, -0.0461814914754167, 0.24739560569213834,
            -0.3151711037535203, 0.10192022020935702, 0.41630240975382443, -1.0041666257061594,
            1.08639233763257, -0.1472127720726727, -1.6270639633936879, 9.72163176270493,
            -19.35475661318765, -48.60304120448868,
        )),
    ),
}
