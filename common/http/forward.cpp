// forward_get: an asynchronous HTTP GET whose answer is streamed through a Reply
// (the scheduler proxies task logs from agents this way). No thread waits on the
// upstream: each step is a completion handler on the server's I/O threads.
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include "server_impl.hpp"

namespace tessel::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using beast::error_code;

namespace {

class Forward : public std::enable_shared_from_this<Forward> {
 public:
  Forward(asio::io_context& ioc, std::string host, int port, std::string target, ForwardOptions opts, Reply reply)
      : resolver_(asio::make_strand(ioc)),
        stream_(resolver_.get_executor()),
        host_(std::move(host)),
        port_(port),
        target_(std::move(target)),
        opts_(std::move(opts)),
        reply_(std::move(reply)) {}

  void start() {
    resolver_.async_resolve(host_, std::to_string(port_),
                            [self = shared_from_this()](error_code ec, const tcp::resolver::results_type& results) {
                              if (ec) return self->unreachable(ec);
                              self->stream_.expires_after(self->opts_.connect_timeout);
                              self->stream_.async_connect(results, [self](error_code ec, const tcp::endpoint&) {
                                if (ec) return self->unreachable(ec);
                                self->send();
                              });
                            });
  }

 private:
  void send() {
    req_ = std::make_shared<bhttp::request<bhttp::empty_body>>(bhttp::verb::get, target_, 11);
    req_->set(bhttp::field::host, host_ + ":" + std::to_string(port_));
    for (const auto& h : opts_.headers) req_->insert(h.name, h.value);
    stream_.expires_after(opts_.read_timeout);
    bhttp::async_write(stream_, *req_, [self = shared_from_this()](error_code ec, size_t) {
      if (ec) return self->unreachable(ec);
      self->parser_.body_limit(boost::none);  // Streamed piecewise, never held whole.
      self->stream_.expires_after(self->opts_.read_timeout);
      bhttp::async_read_header(self->stream_, self->buffer_, self->parser_,
                               [self](error_code ec, size_t) { self->on_head(ec); });
    });
  }

  void on_head(error_code ec) {
    if (ec) return unreachable(ec);
    Response r;
    r.status = static_cast<int>(parser_.get().result_int());
    const auto ct = parser_.get()[bhttp::field::content_type];
    r.content_type = ct.empty() ? "text/plain" : std::string(ct);
    r.stream = [self = shared_from_this()](std::shared_ptr<BodyStream> out) {
      self->out_ = std::move(out);
      // The client left: close the upstream now, not at its next byte (a followed log
      // may stay silent for hours), which ends the pump and frees the agent's side too.
      self->out_->on_close([weak = std::weak_ptr<Forward>(self)] {
        if (auto f = weak.lock())
          asio::post(f->stream_.get_executor(), [f] {
            error_code ignored;
            f->stream_.socket().close(ignored);
          });
      });
      self->pump();
    };
    reply_(std::move(r));
  }

  // Reads the next piece of the upstream body and writes it downstream.
  void pump() {
    if (parser_.is_done()) return end("");
    parser_.get().body().data = chunk_;
    parser_.get().body().size = sizeof chunk_;
    stream_.expires_after(opts_.read_timeout);
    bhttp::async_read_some(stream_, buffer_, parser_, [self = shared_from_this()](error_code ec, size_t) {
      if (ec == bhttp::error::need_buffer) ec = {};
      const size_t n = sizeof self->chunk_ - self->parser_.get().body().size;
      if (ec) return self->end("\n[tessel: stream from " + self->host_ + " ended: " + ec.message() + "]\n");
      self->out_->write(std::string(self->chunk_, n), [self](bool ok) {
        if (ok) return self->pump();
        error_code ignored;
        self->stream_.socket().close(ignored);  // The downstream client went away.
      });
    });
  }

  void end(const std::string& note) {
    error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    if (note.empty()) return out_->finish();
    out_->write(note, [self = shared_from_this()](bool) { self->out_->finish(); });
  }

  void unreachable(error_code ec) {
    reply_(Error::unavailable(host_ + ":" + std::to_string(port_) + " unreachable: " + ec.message()));
  }

  tcp::resolver resolver_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  bhttp::response_parser<bhttp::buffer_body> parser_;
  std::shared_ptr<bhttp::request<bhttp::empty_body>> req_;
  char chunk_[16 * 1024];
  std::string host_;
  int port_;
  std::string target_;
  ForwardOptions opts_;  // Its `hold` lives as long as the forward.
  Reply reply_;
  std::shared_ptr<BodyStream> out_;
};

}  // namespace

void forward_get(Server& server, const std::string& host, int port, const std::string& target, ForwardOptions opts,
                 Reply reply) {
  std::make_shared<Forward>(server.impl_->ioc, host, port, target, std::move(opts), std::move(reply))->start();
}

}  // namespace tessel::http
