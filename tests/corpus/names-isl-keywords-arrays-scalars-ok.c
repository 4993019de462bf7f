// expect: ok
// options: --size N=20,max=2
void f(int N, double max, double min[N], double B[N]) {
  for (int i = 0; i < N; i++) {
    double mod = min[i];
    B[i] = max * mod;
  }
}
