//! A saved game as a Bevy game makes one (feature `serialize`): the units and maps, with the
//! plugin's settings, as a `DynamicWorld` in RON, saved inside `bevy_tilepath::save_with`; and
//! loaded into another app. Shared by the soak runner and the saved-game tests.

use std::any::TypeId;

use bevy::asset::{AssetPath, LoadFromPath, UntypedHandle};
use bevy::ecs::entity::EntityHashMap;
use bevy::prelude::*;
use bevy::world_serialization::serde::WorldDeserializer;
use bevy::world_serialization::{DynamicWorld, DynamicWorldBuilder};
use bevy_tilepath::prelude::*;
use serde::de::DeserializeSeed;

/// Saves every unit (an entity with a `PathStatus`) and map of `world`, each with all its
/// registered components, and the plugin's settings, as RON.
pub fn save(world: &mut World) -> Result<String, String> {
    register_transform(world);
    bevy_tilepath::save_with(world, |world| {
        let registry = world.resource::<AppTypeRegistry>().clone();
        let registry = registry.read();
        let mut saved =
            world.query_filtered::<Entity, Or<(With<NavAgent>, With<PathStatus>, With<NavMap>)>>();
        DynamicWorldBuilder::from_world(world, &registry)
            .extract_entities(saved.iter(world))
            .allow_resource::<TilepathSettings>()
            .extract_resources()
            .build()
            .serialize(&registry)
            .map_err(|e| e.to_string())
    })
}

/// `Transform` in the type registry: `TransformPlugin` registers it, but these apps are built on
/// `MinimalPlugins`, without it.
fn register_transform(world: &mut World) {
    world
        .resource::<AppTypeRegistry>()
        .write()
        .register::<Transform>();
}

/// Saved games here name no assets: a handle in one (a file edited by hand) loads as the
/// type's default handle.
struct NoAssets;

impl LoadFromPath for NoAssets {
    fn load_from_path_erased(&mut self, type_id: TypeId, _: AssetPath<'static>) -> UntypedHandle {
        UntypedHandle::default_for_type(type_id)
    }
}

/// Loads `ron` into `world` (an app with the plugins): the saved entities' new ids.
pub fn load(world: &mut World, ron: &str) -> Result<EntityHashMap<Entity>, String> {
    register_transform(world);
    let registry = world.resource::<AppTypeRegistry>().clone();
    let dynamic: DynamicWorld = {
        let registry = registry.read();
        let mut deserializer =
            ron::de::Deserializer::from_str(ron).map_err(|e| format!("saved game: {e}"))?;
        WorldDeserializer {
            type_registry: &registry,
            load_from_path: &mut NoAssets,
        }
        .deserialize(&mut deserializer)
        .map_err(|e| format!("saved game: {e}"))?
    };
    let mut ids = EntityHashMap::default();
    dynamic
        .write_to_world(world, &mut ids)
        .map_err(|e| format!("saved game: {e}"))?;
    Ok(ids)
}
