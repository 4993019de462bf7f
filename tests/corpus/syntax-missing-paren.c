// expect: 5:5 syntax
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  for (int i = 0; i < N; i++
    B[i] = A[i];
}
