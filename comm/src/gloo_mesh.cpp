#include "gloo_mesh.hpp"

namespace keel::comm {

GlooMesh::~GlooMesh() {
    // Closing a pair unregisters its socket from Gloo's event loop and waits
    // for the loop's current pass: after this, nothing of Gloo's touches
    // the leftovers (whoever else still holds parts of the context).
    context_->closeConnections();
    context_.reset();
    std::lock_guard lock(mutex_);
    leftovers_.clear();
}

void GlooMesh::keep_until_closed(std::shared_ptr<void> leftover) {
    std::lock_guard lock(mutex_);
    leftovers_.push_back(std::move(leftover));
}

}  // namespace keel::comm
