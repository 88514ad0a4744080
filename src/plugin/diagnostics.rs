//! Bevy diagnostics for the queue.

use bevy::diagnostic::{Diagnostic, DiagnosticPath, Diagnostics, RegisterDiagnostic};
use bevy::prelude::*;

use super::queue::TilepathFrameStats;

/// The diagnostic paths the plugin publishes.
pub struct TilepathDiagnostics;

impl TilepathDiagnostics {
    /// Requests waiting to start.
    pub const QUEUE_LENGTH: DiagnosticPath = DiagnosticPath::const_new("tilepath/queue_length");
    /// Outcomes delivered per frame.
    pub const SEARCHES_FINISHED: DiagnosticPath =
        DiagnosticPath::const_new("tilepath/searches_finished");
    /// Main-thread milliseconds per frame in the plugin's systems.
    pub const MAIN_THREAD_MS: DiagnosticPath = DiagnosticPath::const_new("tilepath/main_thread_ms");
    /// Mean frames from request to outcome.
    pub const LATENCY_FRAMES: DiagnosticPath = DiagnosticPath::const_new("tilepath/latency_frames");

    pub(crate) fn register(app: &mut App) {
        app.register_diagnostic(Diagnostic::new(Self::QUEUE_LENGTH))
            .register_diagnostic(Diagnostic::new(Self::SEARCHES_FINISHED))
            .register_diagnostic(Diagnostic::new(Self::MAIN_THREAD_MS).with_suffix(" ms"))
            .register_diagnostic(Diagnostic::new(Self::LATENCY_FRAMES));
    }
}

pub(crate) fn publish(mut diagnostics: Diagnostics, stats: Res<TilepathFrameStats>) {
    diagnostics.add_measurement(&TilepathDiagnostics::QUEUE_LENGTH, || {
        stats.queue_len as f64
    });
    diagnostics.add_measurement(&TilepathDiagnostics::SEARCHES_FINISHED, || {
        stats.last_finished as f64
    });
    diagnostics.add_measurement(&TilepathDiagnostics::MAIN_THREAD_MS, || {
        stats.last_main_thread.as_secs_f64() * 1000.0
    });
    diagnostics.add_measurement(&TilepathDiagnostics::LATENCY_FRAMES, || {
        stats.last_latency_frames
    });
}
