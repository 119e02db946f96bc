// App.tsx — seed 000's FilterTip for a signed-in user, on Android, iOS and the web alike: the search screen
// donates `search.opened`; after the third search (catalog/demo.json's rules) tipsd says the tip should show.
import { useEffect } from "react";
import { Button, Text, View } from "react-native";
import type { TipsClient } from "@tipsd/client";
import { useTipsClient, useTipVisibility } from "./hooks";

function FilterTip({ tips }: { tips: TipsClient }) {
  const visible = useTipVisibility(tips, "filter.tip");
  if (!visible) return null;
  return (
    <View accessibilityRole="alert">
      <Text>You can narrow this down</Text>
      <Button title="Learn more" onPress={() => void tips.performAction("filter.tip", "learn-more")} />
      <Button title="Close" onPress={() => void tips.invalidate("filter.tip", "tipClosed")} />
    </View>
  );
}

function SearchScreen({ tips }: { tips: TipsClient }) {
  useEffect(() => {
    void tips.donate("search.opened");
  }, [tips]);
  return (
    <View>
      <FilterTip tips={tips} />
      <Text>Results</Text>
    </View>
  );
}

export default function App() {
  const tips = useTipsClient();
  if (!tips) return <Text>Sign in to see your tips.</Text>;
  return <SearchScreen tips={tips} />;
}
