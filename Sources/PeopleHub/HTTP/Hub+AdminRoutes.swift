import PeopleCore
import PeopleStore
import WebSocketTransport

/// The HTTP API's admin routes (the product contract's HTTP API §2): list, create or import, delete,
/// export; and the webhooks' state.
extension Hub {
    func addAdminRoutes() {
    }
}
