// app/search.tsx in seed 000; the effect is the seed's caller, unchanged. (A .ts file returning null, since these
// tests render without JSX.)
import { useEffect } from "react";
import { router } from "expo-router";
import { tipKit } from "../modules/rork-tipkit";

export default function SearchScreen(): null {
  // app/search.tsx, inside a useEffect
  useEffect(() => {
    tipKit.donate("search.opened");
   
    const unsubscribe = tipKit.onAction(({ tipId, actionId }) => {
      if (tipId === "filter.tip" && actionId === "learn-more") {
        router.push("/help/filter");
      }
    });
   
    return unsubscribe;
  }, []);

  return null;
}
