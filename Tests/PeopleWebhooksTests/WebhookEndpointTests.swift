import Foundation
@testable import PeopleWebhooks
import Testing

/// What the metrics and the log call an endpoint, and how a URL's user and password are sent.
@Suite("Webhook endpoint names and credentials")
struct WebhookEndpointTests {
    @Test("without a name, an endpoint is called by its scheme, host and port: no part that can be a credential")
    func displayName() {
        #expect(WebhookEndpoint.displayName(of: "https://hooks.slack.com/services/T000/B000/SLACKSECRETPATH") == "https://hooks.slack.com")
        #expect(WebhookEndpoint.displayName(of: "http://user:pw@127.0.0.1:9/hook?key=SECRET#frag") == "http://127.0.0.1:9")
        #expect(WebhookEndpoint.displayName(of: "http://[::1]:8080/a;key=k") == "http://[::1]:8080")
        #expect(WebhookEndpoint(url: "https://crm.example/x?k=1", secret: [], rooms: []).name == "https://crm.example")
        #expect(WebhookEndpoint(url: "https://crm.example/x", name: "crm", secret: [], rooms: []).name == "crm")
    }

    @Test("a URL's user and password go as Authorization: Basic (as curl sends them), not in the request's URL")
    func basic() {
        let (url, header) = WebhookPoster.basicAuthentication(of: "http://ann%40crm:p%3Aw@127.0.0.1:9/hook?key=k")
        #expect(url == "http://127.0.0.1:9/hook?key=k")
        #expect(header == "Basic " + Data("ann@crm:p:w".utf8).base64EncodedString())
        let plain = WebhookPoster.basicAuthentication(of: "https://crm.example/hook")
        #expect(plain.url == "https://crm.example/hook" && plain.authorization == nil)
        #expect(WebhookPoster.basicAuthentication(of: "http://token@127.0.0.1/h").authorization
                == "Basic " + Data("token:".utf8).base64EncodedString())
    }
}
