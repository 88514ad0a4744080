//! The smallest use of the plugin: a grid, one unit, one request, print the path. Headless.
//!
//! `cargo run --example minimal`

use bevy::prelude::*;
use bevy_tilepath::prelude::*;

fn main() -> AppExit {
    App::new()
        .add_plugins((MinimalPlugins, TilepathPlugins::default()))
        .add_systems(Startup, setup)
        .add_observer(print_outcome)
        .run()
}

fn setup(mut commands: Commands) {
    // A 20 x 10 grid with a wall down the middle that has one gap.
    let mut grid = NavGrid::new(20, 10).unwrap();
    for y in 1..10 {
        grid.set_walkable(Cell::new(10, y), false).unwrap();
    }
    // One world unit per tile, cell (0, 0) starting at the world origin.
    commands.spawn(NavMap::new(grid, Vec2::ZERO, Vec2::ONE));

    // A unit standing in cell (2, 8) asks for a path to the other side.
    commands.spawn((
        Transform::from_xyz(2.5, 8.5, 0.0),
        PathRequest::to_cell(Cell::new(17, 8)),
    ));
}

/// Observers see every request's single outcome.
fn print_outcome(
    outcome: On<PathOutcome>,
    paths: Query<&NavPath>,
    mut exit: MessageWriter<AppExit>,
) {
    match outcome.kind {
        OutcomeKind::Found { length, search } => {
            let path = paths.get(outcome.entity).expect("found paths are inserted");
            println!(
                "found a path of {length:.2} tiles through {} cells ({search:?} search):",
                path.cells.len()
            );
            println!(
                "  cells: {:?}",
                path.cells.iter().map(|c| (c.x, c.y)).collect::<Vec<_>>()
            );
            println!("  smoothed waypoints: {:?}", path.waypoints);
        }
        other => {
            // The gap is open: no path here is a failure (and the process says so).
            eprintln!("no path: {other:?}");
            exit.write(AppExit::error());
            return;
        }
    }
    exit.write(AppExit::Success);
}
