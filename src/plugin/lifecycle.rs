//! What the plugin does when a [`PathRequest`] is inserted or removed and when a unit is
//! despawned: component hooks, registered by the plugin group (they reach the queue, the traffic
//! at passages and saved games, which sit above the request).

use bevy::ecs::lifecycle::HookContext;
use bevy::ecs::world::DeferredWorld;

use super::queue::path_queue::PathQueue;
use super::request::{PathOrigin, PathRequest, PathStatus, PendingRequests};
use super::saves::loaded_request;
use super::traffic::PassageTraffic;

/// [`PathRequest`]'s `on_insert`: the game's request is booked (unless a saved game is being
/// loaded: the request was booked when it was saved).
pub(crate) fn on_request_insert(mut world: DeferredWorld, ctx: HookContext) {
    let Some(request) = world.get::<PathRequest>(ctx.entity).cloned() else {
        return;
    };
    if loaded_request(&mut world, ctx.entity) {
        return;
    }
    let Some(mut book) = world.get_resource_mut::<PendingRequests>() else {
        return;
    };
    book.submit(ctx.entity, request, PathOrigin::User);
    if let Some(mut status) = world.get_mut::<PathStatus>(ctx.entity) {
        *status = PathStatus::Queued;
    }
}

/// [`PathRequest`]'s `on_remove`: the request is cancelled.
pub(crate) fn on_request_remove(mut world: DeferredWorld, ctx: HookContext) {
    if let Some(mut book) = world.get_resource_mut::<PendingRequests>() {
        book.cancel(ctx.entity);
    }
}

/// [`PathStatus`]'s `on_despawn`: a unit is despawned, nothing is owed to it any more (see [`PathStatus`]). Runs before
/// [`PathRequest`]'s `on_remove`, which then finds no request to cancel.
pub(crate) fn on_unit_despawn(mut world: DeferredWorld, ctx: HookContext) {
    let dropped = world
        .get_resource_mut::<PathQueue>()
        .map_or(0, |mut queue| queue.forget_ready(ctx.entity));
    if let Some(mut book) = world.get_resource_mut::<PendingRequests>() {
        book.forget(ctx.entity);
        book.cancelled.retain(|c| c.entity != ctx.entity);
        book.in_delivery -= dropped;
    }
    if let Some(mut traffic) = world.get_resource_mut::<PassageTraffic>() {
        traffic.forget(ctx.entity);
    }
}
