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
//! `units.rs`; not on hexagons). The roads and bridges are three tiles wide. With `--vehicles`
//! too, the tanks are vehicles: they drive legal turns of radius 1.5 tiles and reverse, never
//! turning in place (their crowds on the roads still overlap more than the infantry-like
//! tanks'). `--look-ahead 0.75` has them look that many seconds ahead for tanks crossing their
//! way and wait for them: they overlap far less, but a packed group setting out takes longer.
//!
//! `--fog` starts with fog of war on (`F` toggles it in the window): each army plans on what its
//! units have seen (unseen ground is assumed open), reveals the map around its units as they
//! go, and plans again when it finds a wall or water across its way. The window darkens what
//! blue has not seen.
//!
//! `--turning-radius R` gives units a turning radius of R tiles (default 0.5; 0 turns in place).
//! `--avoidance` turns local avoidance (ORCA) on, `--no-pushing` turns pushing off (see
//! [`CrowdSettings`](bevy_tilepath::CrowdSettings)), `--no-lanes` turns a group's lanes off
//! (every unit of an order follows one corridor, as before lanes).
//! `--workers N` runs searches on N worker runners (0: inline; the window's default is 4, the
//! headless run's 0).
//!
//! **Lockstep and replays.** `--lockstep` runs the plugins in `FixedUpdate` at 60 ticks a second
//! in lockstep mode ([`TilepathSettings::lockstep`](bevy_tilepath::TilepathSettings)): what
//! happens then depends only on the ticks and the inputs, never on the machine or its load.
//! `--record FILE` (implies `--lockstep`) writes every order, wall and fog toggle with its tick,
//! and the plugin's checksum every 60 ticks (or `--checksums N`); `--replay FILE` plays those
//! inputs back, windowed or `--headless`, with the options the recording was made with, checks
//! every recorded checksum and says at which tick a replay first differs (the headless run then
//! fails). `--checksums N` prints the checksum every N ticks; `--jitter` (headless) sleeps a
//! random 0-4 ms between frames. See `inputs.rs`.
//!
//! ```text
//! cargo run --release --features demo --example rts -- --record game.replay    # play, recorded
//! cargo run --release --features demo --example rts -- --headless --frames 20000 --replay game.replay
//! ```
//!
//! Unknown options are an error. Headless debugging: see `headless.rs`.
//!
//! Controls: drag with the left mouse button to select blue units, right-click to order them
//! (right-drag: the order's target where the drag starts, the formation facing the way it goes;
//! shift: a waypoint after the current orders; `P` held: patrol), `G` cycles the formation of
//! move orders (blob, keep shape, line, box), `S` stops, `H` holds, `W` toggles a wall under the
//! cursor, `F` toggles fog of war, `O` opens and shuts the gate through the long wall west of the
//! river (blue's units only may use it), `F1`-`F7` toggle the debug layers (`F7`: the map's links: a pair of teleporters, a
//! one-way drop across the river and the gate). Red units are given orders by a simple script.
//!
//! - `map.rs`: the generated map, its tilemap, where units start.
//! - `orders.rs`: group orders spread around a point; retries.
//! - `inputs.rs`: orders, walls and fog applied at ticks; recording and replaying them.
//! - `units.rs`: the armies: infantry, and tanks under `--mixed`.
//! - `headless.rs`: the scripted run without a window and its summary line.
//! - `ui.rs`: the windowed game.

#[path = "../common/mod.rs"]
mod common;
mod headless;
mod inputs;
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
    /// `--vehicles` (with `--mixed`): tanks are vehicles that cannot turn in place (turning
    /// radius 1.5 tiles, reversing allowed).
    pub vehicles: bool,
    /// `--look-ahead S` (with `--vehicles`): seconds a tank driving looks ahead for tanks
    /// crossing its way, to wait for them (0, the plugin's default: it drives through them).
    pub look_ahead: f32,
    /// `--fog`: fog of war on from the start (each army plans on what it has seen).
    pub fog: bool,
    /// `--workers N`: searches on N worker runners (0: inline on the main thread); by default
    /// inline headless and 4 in the window.
    pub workers: Option<usize>,
    /// `--lockstep`: the plugins in `FixedUpdate` (60 ticks a second) in lockstep mode, every
    /// unit keyed by its place in the muster (implied by `--record`, `--replay`, `--checksums`).
    pub lockstep: bool,
    /// `--record FILE`: write the inputs with their ticks, and the checksums, to a replay.
    pub record: Option<String>,
    /// `--replay FILE`: play a recorded replay's inputs back, checking its checksums.
    pub replay: Option<String>,
    /// `--checksums N`: print the plugin's checksum every N ticks (60 when recording).
    pub checksums: usize,
    /// `--jitter` (headless): sleep a random 0-4 ms between frames (from the wall clock), to
    /// show a lockstep run does not depend on timing.
    pub jitter: bool,
    /// `--no-lanes`: group orders without lanes ([`TilepathSettings::lanes`](bevy_tilepath::TilepathSettings)):
    /// every unit of a group follows its shared search's one corridor.
    pub lanes: bool,
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

    /// Worker runners for this run (0: inline): `--workers`, or 0 headless and 4 in the window.
    fn worker_count(&self) -> usize {
        self.workers.unwrap_or(if self.headless { 0 } else { 4 })
    }

    /// The plugin's worker mode for this run.
    pub fn worker_mode(&self) -> bevy_tilepath::WorkerMode {
        match self.worker_count() {
            0 => bevy_tilepath::WorkerMode::Inline,
            n => bevy_tilepath::WorkerMode::Async { max_in_flight: n },
        }
    }

    /// The options the simulation depends on, as command-line words (a replay's header).
    pub fn sim_args(&self) -> Vec<String> {
        let mut args = vec![
            format!("--seed {}", self.seed),
            format!("--units {}", self.units),
            format!("--map {}", self.map.name()),
            format!("--turning-radius {}", self.turning_radius),
            format!("--workers {}", self.worker_count()),
        ];
        if self.look_ahead > 0.0 {
            args.push(format!("--look-ahead {}", self.look_ahead));
        }
        for (on, flag) in [
            (self.mixed, "--mixed"),
            (self.vehicles, "--vehicles"),
            (self.fog, "--fog"),
            (self.avoidance, "--avoidance"),
            (!self.pushing, "--no-pushing"),
            (!self.lanes, "--no-lanes"),
        ] {
            if on {
                args.push(flag.to_string());
            }
        }
        args
    }

    /// The schedule the simulation runs in: `FixedUpdate` in lockstep mode, `Update` otherwise.
    pub fn sim_schedule(&self) -> bevy::ecs::schedule::InternedScheduleLabel {
        use bevy::ecs::schedule::ScheduleLabel;
        if self.lockstep {
            FixedUpdate.intern()
        } else {
            Update.intern()
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
            vehicles: false,
            look_ahead: 0.0,
            fog: false,
            workers: None,
            lockstep: false,
            record: None,
            replay: None,
            checksums: 0,
            jitter: false,
            lanes: true,
        }
    }
}

const USAGE: &str = "usage: rts [--headless] [--units N] [--frames N] [--seed N] [--turning-radius R] [--avoidance] [--no-pushing] [--map square|iso|hex] [--mixed [--vehicles [--look-ahead S]]] [--fog] [--workers N] [--lockstep] [--record FILE] [--replay FILE] [--checksums N] [--jitter] [--no-lanes] [--screenshot FILE.png]";

/// The command line; a replay's own options (its first line) replace the simulation's.
fn parse_args() -> Result<(DemoConfig, Option<inputs::Replay>), String> {
    let mut config = DemoConfig::default();
    parse_into(&mut config, lexopt::Parser::from_env())?;
    let Some(path) = config.replay.clone() else {
        return Ok((config, None));
    };
    if config.record.is_some() {
        return Err("--record and --replay: one or the other".into());
    }
    let replay = inputs::Replay::read(&path)?;
    parse_into(&mut config, lexopt::Parser::from_args(replay.args.iter()))
        .map_err(|e| format!("--replay {path}: its options: {e}"))?;
    if config.replay.as_deref() != Some(path.as_str()) || config.record.is_some() {
        return Err(format!(
            "--replay {path}: its options name a replay or a recording"
        ));
    }
    eprintln!("replaying {path}: {}", replay.args.join(" "));
    Ok((config, Some(replay)))
}

/// Reads options into `config`.
fn parse_into(config: &mut DemoConfig, mut parser: lexopt::Parser) -> Result<(), String> {
    use lexopt::prelude::*;
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
            Long("vehicles") => config.vehicles = true,
            Long("look-ahead") => {
                let s: f32 = common::value(&mut parser, "--look-ahead")?;
                if !(s >= 0.0 && s.is_finite()) {
                    return Err(format!("--look-ahead: {s} is not a time in seconds"));
                }
                config.look_ahead = s;
            }
            Long("fog") => config.fog = true,
            Long("workers") => config.workers = Some(common::value(&mut parser, "--workers")?),
            Long("lockstep") => config.lockstep = true,
            Long("record") => config.record = Some(common::value(&mut parser, "--record")?),
            Long("replay") => config.replay = Some(common::value(&mut parser, "--replay")?),
            Long("checksums") => config.checksums = common::value(&mut parser, "--checksums")?,
            Long("jitter") => config.jitter = true,
            Long("no-lanes") => config.lanes = false,
            Long("help") | Short('h') => return Err(USAGE.into()),
            other => return Err(common::unexpected(other)),
        }
    }
    if config.look_ahead > 0.0 && !config.vehicles {
        return Err("--look-ahead: needs --vehicles".into());
    }
    if config.vehicles && (!config.mixed || config.map != map::MapKind::Square) {
        return Err("--vehicles: needs --mixed (the tanks) on square tiles".into());
    }
    if config.mixed && config.map == map::MapKind::Hex {
        return Err("--mixed: tanks wider than a tile need square or diamond tiles".into());
    }
    config.lockstep |= config.record.is_some() || config.replay.is_some() || config.checksums > 0;
    Ok(())
}

fn main() -> ExitCode {
    let inputs = parse_args()
        .and_then(|(config, replay)| Ok((inputs::Inputs::new(&config, replay)?, config)));
    let (inputs, config) = match inputs {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}\n{USAGE}");
            return ExitCode::FAILURE;
        }
    };
    if config.headless {
        headless::run(config, inputs)
    } else {
        ui::run(config, inputs);
        ExitCode::SUCCESS
    }
}
