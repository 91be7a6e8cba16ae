// A C++ app for the tests: client-cxx APP NAMESPACE [--once]
//
// The same as client.c, written the way a C++ (Qt-style) app would wrap the C
// interface: a small RAII class, exceptions, std::string. Prints "value HEX"
// and "app UUID"; unless --once, participates and prints "change HEX" on
// every change until SIGTERM ("closed" when it has closed).
#include <openudid.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

namespace {

std::atomic<bool> quitRequested{false};
std::mutex outputLock;

void onSignal(int) { quitRequested = true; }

class Udid {
public:
    Udid(const std::string &app, const std::string &ns) {
        openudid_options *options = nullptr;
        check(openudid_options_new(&options), "openudid_options_new");
        int code = openudid_options_set_namespace(options, ns.c_str());
        if (code == OPENUDID_OK) code = openudid_options_set_mirror(options, OPENUDID_MIRROR_FILE);
        if (code == OPENUDID_OK) code = openudid_open_with(app.c_str(), nullptr, options, &handle_);
        openudid_options_free(options);
        check(code, "openudid_open_with");
    }
    ~Udid() { openudid_close(handle_); }
    Udid(const Udid &) = delete;
    Udid &operator=(const Udid &) = delete;

    std::string value() const {
        char buffer[OPENUDID_VALUE_SIZE];
        check(openudid_value(handle_, buffer), "openudid_value");
        return buffer;
    }

    std::string appValue() const {
        char buffer[OPENUDID_APP_VALUE_SIZE];
        check(openudid_app_value(handle_, buffer), "openudid_app_value");
        return buffer;
    }

    // `onChange` runs on a thread of the library's.
    void participate(void (*onChange)(const char *, void *), void *context) {
        check(openudid_participate(handle_, onChange, context), "openudid_participate");
    }

private:
    static void check(int code, const char *what) {
        if (code != OPENUDID_OK) {
            throw std::runtime_error(std::string(what) + " failed (" + openudid_strerror(code) + "): " + openudid_last_error());
        }
    }

    openudid *handle_ = nullptr;
};

void printChange(const char *id, void *) {
    std::lock_guard<std::mutex> guard(outputLock);
    std::cout << "change " << id << std::endl;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 3) {
        std::cerr << "usage: client-cxx APP NAMESPACE [--once]" << std::endl;
        return 2;
    }
    try {
        Udid udid(argv[1], argv[2]);
        {
            std::lock_guard<std::mutex> guard(outputLock);
            std::cout << "value " << udid.value() << "\napp " << udid.appValue() << std::endl;
        }
        if (argc > 3 && std::strcmp(argv[3], "--once") == 0) return 0;
        std::signal(SIGTERM, onSignal);
        std::signal(SIGINT, onSignal);
        udid.participate(printChange, nullptr);
        while (!quitRequested) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } catch (const std::exception &error) {
        std::cerr << "client-cxx: " << error.what() << std::endl;
        return 1;
    }
    std::cout << "closed" << std::endl;
    return 0;
}
