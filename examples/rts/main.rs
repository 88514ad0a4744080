//! The RTS demo: a generated map drawn with bevy_ecs_tilemap, two armies, box selection,
//! right-click orders, live wall editing and the debug overlay.
//!
//! ```text
//! cargo run --release --features demo --example rts                      # play
//! cargo run --release --features demo --example rts -- --headless --units 1000 --frames 3000 --seed 1
//! cargo run --release --features demo --example rts -- --screenshot docs/rts.png
//! cargo run --release --features demo --example rts -- --map hex     # the same map on hexagons
//! ```
//!
//! `--map square|iso|hex` draws the map on square tiles (the default), isometric diamonds or
//! pointy-top hexagons; the plugin builds its navigation grid from any of them.
//!
//! `--mixed` puts tanks among the infantry: two tiles across, they never plan through a gap
//! narrower than themselves, forest is closed to them and roads are their fast way (see
//! `units.rs`; not on hexagons). The roads and bridges are three tiles wide.
//!
//! `--fog` starts with fog of war on (`F` toggles it in the window): each army plans on what its
//! units have seen (unseen ground is assumed open), reveals the map around its units as they
//! go, and plans again when it finds a wall or water across its way. The window darkens what
//! blue has not seen.
//!
//! `--turning-radius R` gives units a turning radius of R tiles (default 0.5; 0 turns in place).
//! `--avoidance` turns local avoidance (ORCA) on, `--no-pushing` turns pushing off (see
//! [`CrowdSettings`](bevy_tilepath::CrowdSettings)).
//! Unknown options are an error. Headless debugging: see `headless.rs`.
//!
//! Controls: drag with the left mouse button to select blue units, right-click to order them,
//! `W` toggles a wall under the cursor, `F` toggles fog of war, `F1`-`F6` toggle the debug
//! layers. Red units are given
//! orders by a simple script.
//!
//! - `map.rs`: the generated map, its tilemap, where units start.
//! - `orders.rs`: group orders spread around a point; retries.
//! - `units.rs`: the armies: infantry, and tanks under `--mixed`.
//! - `headless.rs`: the scripted run without a window and its summary line.
//! - `ui.rs`: the windowed game.

#[path = "../common/mod.rs"]
mod common;
mod headless;
mod map;
mod orders;
mod ui;
mod units;

use std::process::ExitCode;

use bevy::prelude::*;

/// The command line, as a resource the demo's systems read.
#[derive(Resource, Clone, Debug)]
pub struct DemoConfig {
    /// Run without a window (scripted orders, a summary line).
    pub headless: bool,
    /// Units in both armies together.
    pub units: usize,
    /// Frames of the headless run.
    pub frames: usize,
    /// Seed of the map and the script.
    pub seed: u64,
    /// Save a screenshot here a few seconds in, then quit.
    pub screenshot: Option<String>,
    /// Tiles; 0 turns in place.
    pub turning_radius: f32,
    /// `--avoidance`: local avoidance (ORCA) on, off by default.
    pub avoidance: bool,
    /// `--no-pushing`: units do not push each other.
    pub pushing: bool,
    /// `--map`: the kind of tilemap.
    pub map: map::MapKind,
    /// `--mixed`: tanks among the infantry (two tiles across, forest closed to them).
    pub mixed: bool,
    /// `--fog`: fog of war on from the start (each army plans on what it has seen).
    pub fog: bool,
}

impl DemoConfig {
    /// The plugin's fog settings for this run.
    pub fn fog(&self) -> bevy_tilepath::FogSettings {
        bevy_tilepath::FogSettings {
            enabled: self.fog,
            // Unseen ground is taken for grass, the map's plain ground.
            assumed: map::Terrain::Grass.cost(),
            ..Default::default()
        }
    }

    /// The plugin's crowd settings for this run.
    pub fn crowd(&self) -> bevy_tilepath::CrowdSettings {
        bevy_tilepath::CrowdSettings {
            avoidance: self.avoidance,
            pushing: self.pushing,
            ..Default::default()
        }
    }
}

impl Default for DemoConfig {
    fn default() -> Self {
        DemoConfig {
            headless: false,
            units: 600,
            frames: 3000,
            seed: 1,
            screenshot: None,
            turning_radius: 0.5,
            avoidance: false,
            pushing: true,
            map: map::MapKind::Square,
            mixed: false,
            fog: false,
        }
    }
}

const USAGE: &str = "usage: rts [--headless] [--units N] [--frames N] [--seed N] [--turning-radius R] [--avoidance] [--no-pushing] [--map square|iso|hex] [--mixed] [--fog] [--screenshot FILE.png]";

fn parse_args() -> Result<DemoConfig, String> {
    use lexopt::prelude::*;
    let mut config = DemoConfig::default();
    let mut parser = lexopt::Parser::from_env();
    while let Some(arg) = parser.next().map_err(|e| e.to_string())? {
        match arg {
            Long("headless") => config.headless = true,
            Long("units") => config.units = common::value(&mut parser, "--units")?,
            Long("frames") => config.frames = common::value(&mut parser, "--frames")?,
            Long("seed") => config.seed = common::value(&mut parser, "--seed")?,
            Long("screenshot") => {
                config.screenshot = Some(common::value(&mut parser, "--screenshot")?)
            }
            Long("turning-radius") => {
                let r: f32 = common::value(&mut parser, "--turning-radius")?;
                if !(r >= 0.0 && r.is_finite()) {
                    return Err(format!("--turning-radius: {r} is not a distance"));
                }
                config.turning_radius = r;
            }
            Long("avoidance") => config.avoidance = true,
            Long("no-pushing") => config.pushing = false,
            Long("map") => {
                let kind: String = common::value(&mut parser, "--map")?;
                config.map = map::MapKind::parse(&kind)?;
            }
            Long("mixed") => config.mixed = true,
            Long("fog") => config.fog = true,
            Long("help") | Short('h') => return Err(USAGE.into()),
            other => return Err(common::unexpected(other)),
        }
    }
    if config.mixed && config.map == map::MapKind::Hex {
        return Err("--mixed: tanks wider than a tile need square or diamond tiles".into());
    }
    Ok(config)
}

fn main() -> ExitCode {
    let config = match parse_args() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}\n{USAGE}");
            return ExitCode::FAILURE;
        }
    };
    if config.headless {
        headless::run(config)
    } else {
        ui::run(config);
        ExitCode::SUCCESS
    }
}
