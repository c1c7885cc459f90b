// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "PeopleKeeper",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "PeopleCore", targets: ["PeopleCore"]),
        .executable(name: "peoplekeeper-bench", targets: ["peoplekeeper-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/pointfreeco/swift-identified-collections.git", from: "1.1.1"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
    ],
    targets: [
        // The pure heart: model, diffs, transform, undo, the room's and the client's state machines, wire messages.
        // No sockets, files, clocks, randomness or logging.
        .target(
            name: "PeopleCore",
            dependencies: [
                .product(name: "IdentifiedCollections", package: "swift-identified-collections"),
            ]
        ),
        .executableTarget(
            name: "peoplekeeper-bench",
            dependencies: [
                "PeopleCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "PeopleCoreTests",
            dependencies: [
                "PeopleCore",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
