//! Float math that gives the same bits on every platform (lockstep). IEEE `+ - * /` and `sqrt`
//! are correctly rounded everywhere; the transcendental functions of `std` call the platform's
//! math library, whose last bits differ between platforms, so the simulation computes them
//! with `libm` (pure Rust, the same code everywhere) instead.

use bevy::math::{Quat, Vec2};

/// Sine (`libm`).
#[inline]
pub fn sin(x: f32) -> f32 {
    libm::sinf(x)
}

/// Cosine (`libm`).
#[inline]
pub fn cos(x: f32) -> f32 {
    libm::cosf(x)
}

/// The angle of `(x, y)` from the x axis, in (-pi, pi] (`libm`).
#[inline]
pub fn atan2(y: f32, x: f32) -> f32 {
    libm::atan2f(y, x)
}

/// Arc cosine (`libm`).
#[inline]
pub fn acos(x: f32) -> f32 {
    libm::acosf(x)
}

/// `e` to the power `x` (`libm`).
#[inline]
pub fn exp(x: f32) -> f32 {
    libm::expf(x)
}

/// The unit vector at `angle` radians from the x axis.
#[inline]
pub fn unit_at(angle: f32) -> Vec2 {
    Vec2::new(cos(angle), sin(angle))
}

/// The rotation about z that turns the x axis toward `dir` (any length; the x axis itself when
/// zero), from `+ * /` and `sqrt` alone: the half-way vector's quaternion, normalised.
pub fn rotation_toward(dir: Vec2) -> Quat {
    let Some(d) = dir.try_normalize() else {
        return Quat::IDENTITY;
    };
    // q = (0, 0, sin(a/2), cos(a/2)) is (0, 0, d.y, 1 + d.x) normalised; opposite the x axis
    // that vector vanishes, and the half turn is (0, 0, 1, 0).
    let w = 1.0 + d.x;
    if w <= 1e-6 {
        return Quat::from_xyzw(0.0, 0.0, 1.0, 0.0);
    }
    Quat::from_xyzw(0.0, 0.0, d.y, w).normalize()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_toward_matches_the_angle_of_the_direction() {
        for k in 0..64 {
            let a = -std::f32::consts::PI + k as f32 * std::f32::consts::TAU / 64.0;
            let dir = Vec2::new(a.cos(), a.sin()) * 3.0;
            let q = rotation_toward(dir);
            let turned = q * bevy::math::Vec3::X;
            assert!((turned.truncate() - dir.normalize()).length() < 1e-5, "{a}");
        }
        assert_eq!(rotation_toward(Vec2::ZERO), Quat::IDENTITY);
    }

    #[test]
    fn libm_agrees_with_std_to_a_few_ulps() {
        for k in -100..100 {
            let x = k as f32 * 0.0731;
            assert!((sin(x) - x.sin()).abs() <= 1e-6);
            assert!((cos(x) - x.cos()).abs() <= 1e-6);
            assert!((atan2(x, 1.3) - x.atan2(1.3)).abs() <= 1e-6);
            assert!((exp(x * 0.1) - (x * 0.1).exp()).abs() <= 1e-5 * (x * 0.1).exp());
        }
    }
}
