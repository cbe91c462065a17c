// The proof that the environment the agent sets is what a real distributed job
// needs: a two-node tessel-train job submitted through the real scheduler to two
// real agents on loopback rendezvouses over c10d (TCPStore + Gloo) using only
// the variables the agents set, trains, and leaves a checkpoint.
#include <gtest/gtest.h>

#include <filesystem>

#include "cluster.hpp"

using namespace tessel::itest;
using nlohmann::json;
using namespace std::chrono_literals;

TEST(TrainEndToEnd, TwoNodeTrainingJobFinishesWithACheckpoint) {
  Cluster c;
  c.start_scheduler();
  c.start_agent("n1");
  c.start_agent("n2");
  ASSERT_TRUE(c.wait_node_state("n1", "ready"));
  ASSERT_TRUE(c.wait_node_state("n2", "ready"));

  const std::string out = c.root() + "/ckpt";
  json spec = {{"name", "train-2node"},
               {"nodes", 2},
               {"devices", 2},
               {"time_limit_s", 300},
               {"command",
                {TESSEL_TRAIN_BIN,
                 "--data",
                 TESSEL_TRAIN_TEXT,
                 "--out",
                 out,
                 "--steps",
                 "6",
                 "--checkpoint-every",
                 "3",
                 "--threads",
                 "1",
                 "--layers",
                 "1",
                 "--dim",
                 "32",
                 "--heads",
                 "2",
                 "--context",
                 "32",
                 "--batch-size",
                 "4"}}};
  auto job = c.submit(spec);
  auto done = c.wait_job(job["id"], {"succeeded", "failed", "cancelled"}, 240s);
  ASSERT_TRUE(done) << "job did not finish";
  std::string log0 = c.log((*done)["allocations"][0]["node"], job["id"], 0);
  std::string log1 = c.log((*done)["allocations"][1]["node"], job["id"], 1);
  ASSERT_EQ((*done)["state"], "succeeded") << done->dump() << "\nrank0:\n" << log0 << "\nrank1:\n" << log1;

  // Two distinct nodes, ranks 0 and 1, rendezvous at rank 0's node.
  ASSERT_EQ((*done)["allocations"].size(), 2u);
  EXPECT_NE((*done)["allocations"][0]["node"], (*done)["allocations"][1]["node"]);
  EXPECT_EQ((*done)["master_addr"], "127.0.0.1");

  // Rank 0 trained in a world of two and reported progress as JSON lines (only
  // rank 0 prints progress); rank 1 exited 0 after the same steps (job succeeded).
  EXPECT_NE(log0.find("\"world_size\":2"), std::string::npos) << log0;
  EXPECT_NE(log0.find("\"step\":6"), std::string::npos) << log0;

  // Rank 0 wrote the checkpoints.
  EXPECT_TRUE(std::filesystem::exists(out + "/ckpt-0000000006.pt")) << "no final checkpoint in " << out;
}
